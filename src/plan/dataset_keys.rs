//! Which `DatasetSpec` keys each kind takes; a key set on a kind that ignores it is an error
//! (a plan must not silently do something else than it says).

use super::spec::{DatasetKind, DatasetSpec};

/// Length rules shared by the file kinds.
const FILE_RULES: &[&str] = &[
    "prefix_file",
    "target_input_len",
    "prefix_role",
    "input_len_mode",
    "min_input_tokens",
    "max_input_tokens",
];

/// The keys `kind` takes besides `kind` itself.
pub fn keys_for(kind: DatasetKind) -> Vec<&'static str> {
    let own: &[&str] = match kind {
        DatasetKind::Random => &[
            "input_tokens",
            "prefix_tokens",
            "prefix_groups",
            "prefix_weights",
        ],
        DatasetKind::Prompt => &["text"],
        DatasetKind::Lines | DatasetKind::Sharegpt => &["path"],
        DatasetKind::Jsonl => &["path", "field"],
        DatasetKind::RandomMultiTurn => &[
            "turns",
            "user_tokens",
            "assistant_tokens",
            "think_time",
            "prefix_tokens",
            "echo_reasoning",
        ],
        DatasetKind::Conversations => &["path", "think_time", "turns", "echo_reasoning"],
        DatasetKind::ToolCalls => &[
            "turns",
            "user_tokens",
            "assistant_tokens",
            "think_time",
            "prefix_tokens",
            "tools",
            "max_tool_rounds",
            "tool_result_tokens",
        ],
        DatasetKind::Trace => &[
            "path",
            "speed",
            "model_override",
            "model_mapping",
            "match_output_length",
            "format",
            "block_size",
            "from",
            "to",
        ],
        DatasetKind::RandomImages => &[
            "width",
            "height",
            "format",
            "images_per_request",
            "text_tokens",
        ],
        // The files' own format is sent: `format` is for generated images only.
        DatasetKind::Images => &["path", "text", "images_per_request", "text_tokens"],
        DatasetKind::RandomEmbedding => &["input_tokens", "batch_size"],
        // Inputs are a line's text, or a JSONL line's `text`, `input`, `query` or `prompt`.
        DatasetKind::Embedding => &["path", "batch_size"],
        DatasetKind::RandomRerank => &["query_tokens", "num_documents", "document_length_ratio"],
        DatasetKind::Rerank => &["path", "num_documents"],
        DatasetKind::Mix => &["mix", "assign"],
    };
    let file_kind = matches!(
        kind,
        DatasetKind::Prompt | DatasetKind::Lines | DatasetKind::Jsonl | DatasetKind::Sharegpt
    );
    let mut keys = own.to_vec();
    if file_kind {
        keys.extend_from_slice(FILE_RULES);
    }
    keys
}

/// Keys set that a kind takes but that do nothing without another key: `(key, message)`.
/// `supplied` says which keys come from elsewhere (a matrix axis).
pub(crate) fn idle_keys(
    spec: &DatasetSpec,
    supplied: impl Fn(&str) -> bool,
) -> Vec<(String, String)> {
    let rules: [(&str, bool, &str, bool); 3] = [
        (
            "prefix_role",
            spec.prefix_role.is_some(),
            "prefix_file",
            spec.prefix_file.is_some(),
        ),
        (
            "input_len_mode",
            spec.input_len_mode.is_some(),
            "target_input_len",
            spec.target_input_len.is_some(),
        ),
        (
            "model_mapping",
            !spec.model_mapping.is_empty(),
            "no `model_override`",
            spec.model_override.is_none(),
        ),
    ];
    rules
        .into_iter()
        .filter(|(_, set, needs, given)| *set && !*given && !supplied(needs))
        .map(|(key, _, needs, _)| {
            let message = match needs.strip_prefix("no ") {
                Some(other) => {
                    format!("`{key}` has no effect with {other}, which replaces every model")
                }
                None => format!("`{key}` has no effect without `{needs}`"),
            };
            (key.to_string(), message)
        })
        .collect()
}

/// Keys set in `spec` that its kind does not take, in the order of the spec's fields.
pub fn misplaced_keys(spec: &DatasetSpec) -> Vec<String> {
    let allowed = keys_for(spec.kind);
    let Ok(serde_json::Value::Object(set)) = serde_json::to_value(spec) else {
        return Vec::new();
    };
    set.keys()
        .filter(|k| k.as_str() != "kind" && !allowed.contains(&k.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> DatasetSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn keys_of_another_kind_are_reported() {
        let s = spec(json!({"kind": "random", "input_tokens": 8, "path": "x", "field": "f"}));
        assert_eq!(misplaced_keys(&s), ["path", "field"]);
        let s =
            spec(json!({"kind": "lines", "path": "x", "prefix_file": "p", "target_input_len": 9}));
        assert!(misplaced_keys(&s).is_empty());
        let s = spec(json!({"kind": "prompt", "text": "t", "input_tokens": 3}));
        assert_eq!(misplaced_keys(&s), ["input_tokens"]);
        let s = spec(json!({"kind": "images", "path": "x", "format": "png"}));
        assert_eq!(misplaced_keys(&s), ["format"]);
    }

    #[test]
    fn keys_that_need_another_key_are_idle_without_it() {
        let s = spec(
            json!({"kind": "lines", "path": "x", "prefix_role": "user", "input_len_mode": "cap"}),
        );
        let idle: Vec<String> = idle_keys(&s, |_| false)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(idle, ["prefix_role", "input_len_mode"]);
        // A key the matrix supplies counts as given.
        assert_eq!(idle_keys(&s, |k| k == "target_input_len").len(), 1);
        let s = spec(
            json!({"kind": "trace", "path": "t", "model_override": "M", "model_mapping": {"a": "b"}}),
        );
        let (key, message) = idle_keys(&s, |_| false).remove(0);
        assert_eq!(key, "model_mapping");
        assert!(message.contains("model_override"), "{message}");
    }
}
