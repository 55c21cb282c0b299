//! What a server says about itself: the self-description routes of the engines perfplan
//! knows (vLLM `GET /version`, SGLang `/get_server_info`, TGI `/info`, llama.cpp
//! `/props`), decoded into a version, the engine the route names, and the answers'
//! scalar fields (flags) flattened to `a.b` keys. Secret-looking keys are dropped
//! (`api_key`, `hf_token`, …), long texts (a chat template) too. Pure: the caller fetches.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::api::models::ListedModel as ModelFacts;

/// `(route, engine)`: the routes asked, most specific last (its engine wins).
pub const ROUTES: [(&str, &str); 4] = [
    ("/version", "vllm"),
    ("/props", "llama.cpp"),
    ("/info", "tgi"),
    ("/get_server_info", "sglang"),
];

/// Longest text kept as a field.
const MAX_TEXT: usize = 200;
/// Most fields kept from one server.
const MAX_FIELDS: usize = 120;

/// A server's own account of itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerFacts {
    /// The engine the answering routes name (`vllm`, `sglang`, `tgi`, `llama.cpp`), or
    /// the answer's own `server` name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The answer's `version` (llama.cpp: `build_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The routes that answered with a JSON object.
    #[serde(default)]
    pub routes: Vec<String>,
    /// Scalar fields of the answers (`max_total_tokens`, `default_generation_settings.n_ctx`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, Value>,
}

/// Whether a field's key names a secret: a word of it (split at `_`, `-`, `.`) is `key`,
/// `apikey`, `token`, `secret`, `password`, `passwd`, `authorization`, `auth`, `cookie`
/// or `credentials` (so `hf_token` and `api_key` are, `max_total_tokens` is not).
pub(crate) fn is_secret_key(key: &str) -> bool {
    const WORDS: [&str; 11] = [
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "authorization",
        "auth",
        "cookie",
        "credential",
        "credentials",
    ];
    key.to_ascii_lowercase()
        .split(['_', '-', '.'])
        .any(|w| WORDS.contains(&w))
}

/// Adds the scalar fields of `v` under `prefix`, two levels deep.
fn flatten(prefix: &str, v: &Value, depth: usize, out: &mut BTreeMap<String, Value>) {
    let Value::Object(map) = v else { return };
    for (k, v) in map {
        if is_secret_key(k) || out.len() >= MAX_FIELDS {
            continue;
        }
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::String(s) if s.chars().count() > MAX_TEXT => {}
            Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                out.entry(key).or_insert_with(|| v.clone());
            }
            Value::Object(_) if depth < 2 => flatten(&key, v, depth + 1, out),
            _ => {}
        }
    }
}

/// The server's facts from its answers (`route`, body) to the [`ROUTES`] (only 2xx
/// answers); `None` when no answer is a JSON object.
pub(crate) fn describe(answers: &[(&str, &[u8])]) -> Option<ServerFacts> {
    let mut facts = ServerFacts::default();
    for (route, body) in answers {
        let Ok(v @ Value::Object(_)) = serde_json::from_slice::<Value>(body) else {
            continue;
        };
        facts.routes.push((*route).to_string());
        if let Some((_, engine)) = ROUTES.iter().find(|(r, _)| r == route) {
            facts.engine = Some((*engine).to_string());
        }
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        facts.version = facts
            .version
            .or_else(|| text("version"))
            .or_else(|| text("build_info"));
        flatten("", &v, 1, &mut facts.fields);
    }
    if let Some(name) = facts.fields.get("server").and_then(Value::as_str) {
        facts.engine = Some(name.to_string());
    }
    // Said once, as the engine and version.
    for key in ["server", "version", "build_info"] {
        facts.fields.remove(key);
    }
    (!facts.routes.is_empty()).then_some(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_are_words_not_substrings() {
        for k in [
            "api_key",
            "hf_token",
            "admin-api-key",
            "password",
            "ssl.auth",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "max_total_tokens",
            "tokenizer_path",
            "keyfile_path",
            "version",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn an_sglang_answer_keeps_flags_and_drops_secrets() {
        let body = br#"{"version": "0.4.6", "tp_size": 2, "api_key": "sk-secret",
            "enable_metrics": true, "chat_template": null,
            "internal_states": [{"x": 1}], "speculative": {"algorithm": "EAGLE"}}"#;
        let f = describe(&[("/version", b"not json"), ("/get_server_info", body)]).unwrap();
        assert_eq!(f.engine.as_deref(), Some("sglang"));
        assert_eq!(f.version.as_deref(), Some("0.4.6"));
        assert_eq!(f.routes, ["/get_server_info"]);
        assert_eq!(f.fields["tp_size"], 2);
        assert_eq!(f.fields["speculative.algorithm"], "EAGLE");
        assert!(!f.fields.contains_key("api_key"));
        assert!(!serde_json::to_string(&f).unwrap().contains("sk-secret"));
    }

    #[test]
    fn vllm_version_and_nothing() {
        let f = describe(&[("/version", br#"{"version": "0.8.5"}"#)]).unwrap();
        assert_eq!(
            (f.engine.as_deref(), f.version.as_deref()),
            (Some("vllm"), Some("0.8.5"))
        );
        assert!(describe(&[]).is_none());
    }
}
