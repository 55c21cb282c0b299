//! `perfplan k8s PLAN --shards N`: the Kubernetes manifests of a sharded suite, for
//! `kubectl apply -f -`. A ConfigMap holds the plan and its imports (laid out under
//! `/plan` as beside the plan file); an Indexed Job (completions = parallelism = N, one
//! pod per shard) runs `perfplan run --shard auto --merge`, its pods named `NAME-INDEX`
//! in the headless Service `NAME`, so shard 1's barrier is `NAME-0.NAME`; a results
//! volume (a ReadWriteMany PersistentVolumeClaim, or the claim the user names) holds
//! every shard's folder, and shard 1 merges them when all are done. API keys and the
//! plan's literal secrets come from a Secret (`secretKeyRef`), never from the ConfigMap.
//! Knows the plan's texts and names, nothing of running it.

mod yaml;

use std::path::{Component, Path};

use serde_json::{json, Value};

use crate::distribute::barrier::DEFAULT_PORT;
use crate::plan::LoadedPlan;

/// What the manifests are made of besides the plan.
#[derive(Debug, Clone)]
pub struct K8sOptions {
    pub shards: u32,
    pub image: String,
    pub namespace: Option<String>,
    /// An existing claim for the results; `None`: the manifests make one.
    pub out_volume: Option<String>,
    /// The size of the claim the manifests make.
    pub volume_size: String,
    /// The Secret holding the API keys and the plan's literal secrets.
    pub secret: String,
    /// `--only` selections handed to every shard's `perfplan run`.
    pub only: Vec<String>,
}

/// The manifests, and what the user must know: the Secret to create, where results land.
#[derive(Debug, Clone)]
pub struct Manifests {
    pub text: String,
    pub notes: Vec<String>,
}

/// Why the manifests could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum K8sError {
    #[error("--shards must be at least 1")]
    NoShards,
    #[error(
        "the plan file {path} is outside the plan's folder {}: a ConfigMap holds the plan and \
         the files it imports from its own folder down",
        base
    )]
    Outside { path: String, base: String },
    #[error("the plan's name `{0}` gives no Kubernetes name (it needs a letter or digit)")]
    Name(String),
}

/// The manifests of `plan` as one YAML stream.
pub fn manifests(plan: &LoadedPlan, opts: &K8sOptions) -> Result<Manifests, K8sError> {
    if opts.shards == 0 {
        return Err(K8sError::NoShards);
    }
    let name = k8s_name(&plan.spec.plan.name)?;
    let files = plan_files(plan)?;
    let mut docs = vec![config_map(&name, &files), service(&name)];
    if opts.out_volume.is_none() {
        docs.push(claim(&name, &opts.volume_size));
    }
    docs.push(job(plan, &name, &files, opts));
    if let Some(ns) = &opts.namespace {
        for d in &mut docs {
            d["metadata"]["namespace"] = json!(ns);
        }
    }
    let keys = secret_vars(plan);
    let mut notes = Vec::new();
    if !keys.is_empty() {
        let literals: Vec<String> = keys
            .iter()
            .map(|k| format!("--from-literal={k}=…"))
            .collect();
        notes.push(format!(
            "create the Secret first: kubectl create secret generic {} {}",
            opts.secret,
            literals.join(" ")
        ));
    }
    notes.push(format!(
        "each shard writes /results/{name}/<job uid>/shard-K-of-{n}/ on the claim; shard 1 merges \
         them into /results/{name}/<job uid>/merged/ (results.db, report.md, report.html) when \
         all are done; the uid: kubectl get job {name} -o jsonpath='{{.metadata.uid}}'",
        n = opts.shards
    ));
    notes.push(
        "files the plan reads by path (datasets, tokenizers) must be in the image or on a \
         mounted volume at the same paths; the ConfigMap holds only the plan and its imports"
            .into(),
    );
    Ok(Manifests {
        text: yaml::stream(&docs),
        notes,
    })
}

/// The variables the pods take from the Secret: every endpoint's `api_key_env` and the
/// plan's literal secrets (stored as `${PERFPLAN_SECRET_…}` in the ConfigMap's texts).
fn secret_vars(plan: &LoadedPlan) -> Vec<String> {
    let mut vars: Vec<String> = plan
        .spec
        .endpoints
        .values()
        .filter_map(|e| e.api_key_env.clone())
        .chain(plan.secrets.literal.iter().map(|s| s.variable.clone()))
        .collect();
    vars.sort();
    vars.dedup();
    vars
}

/// A DNS-1123 label from a plan's name, short enough for `NAME-INDEX` pod names and the
/// `-results` claim: lowercase, `-` for anything else, `perfplan-` first.
fn k8s_name(plan_name: &str) -> Result<String, K8sError> {
    let mut s: String = plan_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-');
    if s.is_empty() {
        return Err(K8sError::Name(plan_name.to_string()));
    }
    let full = format!("perfplan-{s}");
    Ok(full[..full.len().min(45)].trim_end_matches('-').to_string())
}

/// A plan file in the ConfigMap: its key and its path under `/plan`.
struct PlanFile {
    key: String,
    path: String,
    text: String,
}

/// The plan and its imports, each with its path relative to the plan's folder.
fn plan_files(plan: &LoadedPlan) -> Result<Vec<PlanFile>, K8sError> {
    let base = &plan.base_dir;
    let mut out = Vec::new();
    for (i, (name, text)) in plan.file_texts().into_iter().enumerate() {
        let p = Path::new(&name);
        let rel = p.strip_prefix(base).unwrap_or(p);
        let escapes = rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
        let rel = rel.to_string_lossy().replace('\\', "/");
        if escapes || rel.is_empty() {
            return Err(K8sError::Outside {
                path: name,
                base: base.display().to_string(),
            });
        }
        let key: String = rel
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-._".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        out.push(PlanFile {
            key: match i {
                0 => key,
                i => format!("import-{i}-{key}"),
            },
            path: rel,
            text,
        });
    }
    Ok(out)
}

fn labels(name: &str) -> Value {
    json!({ "app.kubernetes.io/name": "perfplan", "app.kubernetes.io/instance": name })
}

fn config_map(name: &str, files: &[PlanFile]) -> Value {
    let data: serde_json::Map<String, Value> = files
        .iter()
        .map(|f| (f.key.clone(), json!(f.text)))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": format!("{name}-plan"), "labels": labels(name) },
        "data": data,
    })
}

/// The headless Service that gives every shard's pod its DNS name (`NAME-INDEX.NAME`),
/// published before the pods are ready, so shard 1's barrier is reachable at once.
fn service(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": name, "labels": labels(name) },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": true,
            "selector": labels(name),
            "ports": [{ "name": "barrier", "port": DEFAULT_PORT, "targetPort": DEFAULT_PORT }],
        },
    })
}

fn claim(name: &str, size: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": { "name": format!("{name}-results"), "labels": labels(name) },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": { "requests": { "storage": size } },
        },
    })
}

/// The container's environment: the shard count (an Indexed Job gives only the index),
/// the Service, the Job's uid (each Job's suite gets its own folder), and every API key
/// and literal secret of the plan from the Secret.
fn env(plan: &LoadedPlan, name: &str, opts: &K8sOptions) -> Vec<Value> {
    let mut env = vec![
        json!({ "name": "PERFPLAN_SHARDS", "value": opts.shards.to_string() }),
        json!({ "name": "PERFPLAN_SERVICE", "value": name }),
        json!({ "name": "PERFPLAN_SUITE_ID", "valueFrom": { "fieldRef": {
            "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']" } } }),
    ];
    env.extend(secret_vars(plan).into_iter().map(|v| {
        json!({ "name": v, "valueFrom": { "secretKeyRef": { "name": opts.secret, "key": v } } })
    }));
    env
}

fn job(plan: &LoadedPlan, name: &str, files: &[PlanFile], opts: &K8sOptions) -> Value {
    let main = files
        .first()
        .map_or("plan.toml".to_string(), |f| f.path.clone());
    let mut args = vec![
        "run".to_string(),
        format!("/plan/{main}"),
        "--shard".into(),
        "auto".into(),
        "--out".into(),
        format!("/results/{name}/$(PERFPLAN_SUITE_ID)"),
        "--merge".into(),
    ];
    for set in plan.stored_sets() {
        args.extend(["--set".to_string(), set]);
    }
    for only in &opts.only {
        args.extend(["--only".to_string(), only.clone()]);
    }
    let items: Vec<Value> = files
        .iter()
        .map(|f| json!({ "key": f.key, "path": f.path }))
        .collect();
    let claim = opts
        .out_volume
        .clone()
        .unwrap_or_else(|| format!("{name}-results"));
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "labels": labels(name) },
        "spec": {
            "completionMode": "Indexed",
            "completions": opts.shards,
            "parallelism": opts.shards,
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels(name) },
                "spec": {
                    "subdomain": name,
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "perfplan",
                        "image": opts.image,
                        "args": args,
                        "env": env(plan, name, opts),
                        "ports": [{ "name": "barrier", "containerPort": DEFAULT_PORT }],
                        "volumeMounts": [
                            { "name": "plan", "mountPath": "/plan", "readOnly": true },
                            { "name": "results", "mountPath": "/results" },
                        ],
                    }],
                    "volumes": [
                        { "name": "plan", "configMap": { "name": format!("{name}-plan"), "items": items } },
                        { "name": "results", "persistentVolumeClaim": { "claimName": claim } },
                    ],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_labels() {
        assert_eq!(
            k8s_name("Sign-off: Qwen3 8B").unwrap(),
            "perfplan-sign-off-qwen3-8b"
        );
        let long = k8s_name(&"x".repeat(90)).unwrap();
        assert!(long.len() <= 45 && long.starts_with("perfplan-x"));
        assert!(k8s_name("—").is_err());
    }
}
