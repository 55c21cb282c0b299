//! The environment in a few short lines, as every report's header shows it: the client
//! machine, the plan's labels, then one line per endpoint (its server, models, launch
//! command and labels).

use std::collections::BTreeMap;

use super::{ClientFacts, EndpointFacts, Environment};

/// `a=b, c=d`.
pub(super) fn labels_text(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Bytes as GiB with one decimal.
pub(super) fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// A limit: its number or `unlimited`.
pub(super) fn limit(v: Option<u64>) -> String {
    v.map_or_else(|| "unlimited".to_string(), |n| n.to_string())
}

fn client_line(c: &ClientFacts) -> String {
    let mut parts = Vec::new();
    parts.extend(c.cpu_model.clone());
    parts.extend(c.cores.map(|n| format!("{n} cores")));
    parts.extend(c.memory_bytes.map(gib));
    parts.extend(c.kernel.as_ref().map(|k| format!("kernel {k}")));
    parts.extend(c.cpu_governor.as_ref().map(|g| format!("governor {g}")));
    parts.extend(
        c.open_files
            .map(|o| format!("open files {}/{}", limit(o.soft), limit(o.hard))),
    );
    format!("client: {}", parts.join(" · "))
}

/// Most characters of a launch command in a header line (JSON and `compare` keep it whole).
const LAUNCH_CHARS: usize = 120;

fn shortened(text: &str) -> String {
    if text.chars().count() > LAUNCH_CHARS {
        format!("{}…", text.chars().take(LAUNCH_CHARS).collect::<String>())
    } else {
        text.to_string()
    }
}

/// One endpoint's line: `endpoint NAME: vllm 0.8.5 · model m (max_model_len 4096) · …`.
pub fn endpoint_line(name: &str, e: &EndpointFacts) -> String {
    let mut parts = Vec::new();
    match &e.server {
        Some(s) => {
            let who = [s.engine.clone(), s.version.clone()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            parts.push(format!("{who} ({})", s.routes.join(", ")));
        }
        None => parts.push("no self-description answered".to_string()),
    }
    for m in &e.models {
        let mut meta = Vec::new();
        meta.extend(m.max_model_len.map(|n| format!("max_model_len {n}")));
        meta.extend(m.owned_by.as_ref().map(|o| format!("owned_by {o}")));
        meta.extend(
            m.root
                .as_ref()
                .filter(|r| **r != m.id)
                .map(|r| format!("root {r}")),
        );
        parts.push(if meta.is_empty() {
            format!("model {}", m.id)
        } else {
            format!("model {} ({})", m.id, meta.join(", "))
        });
    }
    if !e.accelerators.is_empty() {
        let list: Vec<String> = e.accelerators.iter().map(ToString::to_string).collect();
        parts.push(list.join(", "));
    }
    parts.extend(
        e.launch
            .as_ref()
            .map(|c| format!("launched: {}", shortened(c))),
    );
    if !e.labels.is_empty() {
        parts.push(format!("labels {}", labels_text(&e.labels)));
    }
    format!("endpoint {name}: {}", parts.join(" · "))
}

/// The lines of the environment block.
pub fn lines(env: &Environment) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(env.client.as_ref().map(client_line));
    if !env.labels.is_empty() {
        out.push(format!("labels: {}", labels_text(&env.labels)));
    }
    for (name, e) in &env.endpoints {
        out.push(endpoint_line(name, e));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::{Accelerator, ModelFacts, ServerFacts};

    #[test]
    fn an_endpoint_in_one_line() {
        let e = EndpointFacts {
            labels: [("gpu".to_string(), "a".to_string())].into(),
            server: Some(ServerFacts {
                engine: Some("vllm".into()),
                version: Some("0.8.5".into()),
                routes: vec!["/version".into()],
                ..ServerFacts::default()
            }),
            models: vec![ModelFacts {
                id: "m".into(),
                max_model_len: Some(4096),
                owned_by: None,
                root: Some("m".into()),
            }],
            accelerators: vec![Accelerator {
                model: "L4".into(),
                count: 2,
            }],
            launch: Some("vllm serve m --port {port}".into()),
        };
        assert_eq!(
            endpoint_line("a", &e),
            "endpoint a: vllm 0.8.5 (/version) · model m (max_model_len 4096) · 2 × L4 · \
             launched: vllm serve m --port {port} · labels gpu=a"
        );
        let none = EndpointFacts::default();
        assert_eq!(
            endpoint_line("b", &none),
            "endpoint b: no self-description answered"
        );
    }
}
