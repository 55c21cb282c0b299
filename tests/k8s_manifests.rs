//! `perfplan k8s PLAN --shards N`: the manifests hold the plan and its imports, an
//! Indexed Job of N pods running `perfplan run --shard auto --merge`, the headless
//! Service of the barrier, a results volume, and the API key from a Secret, never a
//! literal; and they validate against the Kubernetes OpenAPI schemas with PyPI's
//! `kubernetes-validate` (offline, `--strict`) for 2 and 3 shards. `.ci/run` installs
//! the tool; where it is absent the schema check says so and is skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .env("API_KEY", "sk-live-must-never-appear")
        .output()
        .unwrap()
}

/// A plan with an import in a subfolder, an API key and a literal secret header.
fn plan(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("common")).unwrap();
    std::fs::write(
        dir.join("common/endpoints.toml"),
        "[endpoints.vllm]\nbase_url = \"http://vllm:8000\"\napi_key_env = \"API_KEY\"\n\
         headers = { Authorization = \"Bearer sk-literal-in-plan\" }\n",
    )
    .unwrap();
    let text = "imports = [\"common/endpoints.toml\"]\n[plan]\nname = \"Fleet Sign-off\"\n\
                [models.m]\n[datasets.d]\nkind = \"prompt\"\ntext = \"x\"\n[matrix]\n\
                load = { concurrency = 64, requests = 640, warmup = 64 }\n";
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `kubernetes-validate`, from `PERFPLAN_KUBERNETES_VALIDATE` or the PATH.
fn validator() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PERFPLAN_KUBERNETES_VALIDATE") {
        return Some(PathBuf::from(p));
    }
    let found = Command::new("kubernetes-validate")
        .arg("--version")
        .output();
    found
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "kubernetes-validate".into())
}

fn manifests(plan: &Path, extra: &[&str]) -> String {
    let mut args = vec!["k8s", plan.to_str().unwrap()];
    args.extend(extra);
    let out = perfplan(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn manifests_hold_the_plan_the_job_the_barrier_the_volume_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path());
    let yaml = manifests(&plan, &["--shards", "3", "--namespace", "bench"]);
    for want in [
        "kind: \"ConfigMap\"",
        "  plan.toml: |2\n    imports = [\"common/endpoints.toml\"]",
        "    path: \"common/endpoints.toml\"",
        "kind: \"Service\"",
        "  clusterIP: \"None\"",
        "kind: \"PersistentVolumeClaim\"",
        "    - \"ReadWriteMany\"",
        "  completionMode: \"Indexed\"\n  completions: 3\n  parallelism: 3",
        "      subdomain: \"perfplan-fleet-sign-off\"",
        "            - \"--shard\"\n            - \"auto\"",
        "            - \"--merge\"",
        "            - name: \"PERFPLAN_SHARDS\"\n              value: \"3\"",
        "            - name: \"API_KEY\"\n              valueFrom:\n                secretKeyRef:\n                  \
         name: \"perfplan-api-keys\"\n                  key: \"API_KEY\"",
        "  namespace: \"bench\"",
    ] {
        assert!(yaml.contains(want), "missing {want:?} in\n{yaml}");
    }
    // The literal header is stored as a variable the pod takes from the Secret.
    assert!(
        yaml.contains("${PERFPLAN_SECRET_VLLM_AUTHORIZATION}"),
        "{yaml}"
    );
    assert!(
        yaml.contains("key: \"PERFPLAN_SECRET_VLLM_AUTHORIZATION\""),
        "{yaml}"
    );
    for secret in ["sk-live-must-never-appear", "sk-literal-in-plan"] {
        assert!(!yaml.contains(secret), "a secret in the manifests");
    }
    // A claim of the user's: none is made, theirs is mounted.
    let yaml = manifests(&plan, &["--shards", "2", "--out-volume", "shared-results"]);
    assert!(!yaml.contains("kind: \"PersistentVolumeClaim\""));
    assert!(yaml.contains("claimName: \"shared-results\""), "{yaml}");
    let out = perfplan(&["k8s", plan.to_str().unwrap(), "--shards", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn manifests_validate_against_the_kubernetes_schemas() {
    let Some(tool) = validator() else {
        eprintln!(
            "skipped: kubernetes-validate is not installed (`pip install kubernetes-validate`; \
             .ci/run installs it), so the manifests were not checked against the schemas"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path());
    for (n, extra) in [(2, vec![]), (3, vec!["--out-volume", "results"])] {
        let mut args = vec!["--shards".to_string(), n.to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let file = dir.path().join(format!("m{n}.yaml"));
        std::fs::write(&file, manifests(&plan, &refs)).unwrap();
        let out = Command::new(&tool)
            .args(["--strict", "-k", "1.30.0"])
            .arg(&file)
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{n} shards:\n{said}");
        assert!(!said.contains("ERROR") && !said.contains("WARN"), "{said}");
    }
}
