//! The model list (`GET /v1/models`): the names a server lists, read one way by the
//! connection test, `check` and a plan-free run choosing its model. perfplan's simulator
//! given no `models` serves any name and says so in its list (`ANY_MODEL_KEY`): then
//! there is nothing to judge, and no name is read from it. The same one reading gives
//! each entry's metadata (`max_model_len`, `owned_by`, `root`, as vLLM lists them) for
//! the suite's environment record.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key of a model list that says the server serves any model name.
pub(crate) const ANY_MODEL_KEY: &str = "x_perfplan_any_model";

/// One entry of a model list: its id and the metadata servers add to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedModel {
    pub id: String,
    /// The longest context the server takes (vLLM's `max_model_len`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<String>,
    /// The model the name serves (vLLM: the weights' path or hub name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// The entries of an OpenAI model list (`{"data": [{"id": …}]}`) with their metadata;
/// none for any other body. `any` is whether the server says it serves any name.
pub fn listed(body: &[u8]) -> (Vec<ListedModel>, bool) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return (Vec::new(), false);
    };
    let any = v.get(ANY_MODEL_KEY) == Some(&Value::Bool(true));
    let text = |m: &Value, k: &str| m.get(k).and_then(Value::as_str).map(String::from);
    let models = v
        .get("data")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| {
                    Some(ListedModel {
                        id: text(m, "id")?,
                        max_model_len: m.get("max_model_len").and_then(Value::as_u64),
                        owned_by: text(m, "owned_by"),
                        root: text(m, "root"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    (models, any)
}

/// The `id`s of an OpenAI model list (`{"data": [{"id": …}]}`); none for any other body,
/// and none for a server that serves any name.
pub(crate) fn model_ids(body: &[u8]) -> Vec<String> {
    match listed(body) {
        (_, true) => Vec::new(),
        (models, false) => models.into_iter().map(|m| m.id).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_a_list_and_nothing_of_a_server_that_serves_any() {
        let list = br#"{"object": "list", "data": [{"id": "a"}, {"id": "b"}]}"#;
        assert_eq!(model_ids(list), ["a", "b"]);
        let any = br#"{"data": [{"id": "sim-model"}], "x_perfplan_any_model": true}"#;
        assert!(model_ids(any).is_empty());
        assert!(model_ids(b"not json").is_empty());
    }

    #[test]
    fn metadata_of_a_vllm_list() {
        let list = br#"{"data": [{"id": "m", "owned_by": "vllm", "root": "/w/m",
            "max_model_len": 4096, "permission": []}]}"#;
        let (models, any) = listed(list);
        assert!(!any);
        assert_eq!(
            models,
            [ListedModel {
                id: "m".into(),
                max_model_len: Some(4096),
                owned_by: Some("vllm".into()),
                root: Some("/w/m".into()),
            }]
        );
    }
}
