//! The model list (`GET /v1/models`): the names a server lists, read one way by the
//! connection test, `check` and a plan-free run choosing its model. perfplan's simulator
//! given no `models` serves any name and says so in its list (`ANY_MODEL_KEY`): then
//! there is nothing to judge, and no name is read from it.

use serde_json::Value;

/// The key of a model list that says the server serves any model name.
pub const ANY_MODEL_KEY: &str = "x_perfplan_any_model";

/// Whether a model list says its server serves any model name (`ANY_MODEL_KEY`).
pub fn serves_any(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .is_ok_and(|v| v.get(ANY_MODEL_KEY) == Some(&Value::Bool(true)))
}

/// The `id`s of an OpenAI model list (`{"data": [{"id": …}]}`); none for any other body,
/// and none for a server that serves any name.
pub fn model_ids(body: &[u8]) -> Vec<String> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    if v.get(ANY_MODEL_KEY) == Some(&Value::Bool(true)) {
        return Vec::new();
    }
    v.get("data")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
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
}
