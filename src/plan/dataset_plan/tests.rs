use super::*;
use serde_json::{json, Value};

const KINDS: [DatasetKind; 16] = [
    DatasetKind::Random,
    DatasetKind::Prompt,
    DatasetKind::Lines,
    DatasetKind::Jsonl,
    DatasetKind::Sharegpt,
    DatasetKind::RandomMultiTurn,
    DatasetKind::Conversations,
    DatasetKind::ToolCalls,
    DatasetKind::Trace,
    DatasetKind::RandomImages,
    DatasetKind::Images,
    DatasetKind::RandomEmbedding,
    DatasetKind::Embedding,
    DatasetKind::RandomRerank,
    DatasetKind::Rerank,
    DatasetKind::Mix,
];

/// The smallest table of each kind: its required keys and nothing else (a new kind
/// fails to compile here until it has one).
fn minimal(kind: DatasetKind) -> Value {
    let required = match kind {
        DatasetKind::Random | DatasetKind::RandomEmbedding => json!({"input_tokens": 8}),
        DatasetKind::Prompt => json!({"text": "hi"}),
        DatasetKind::Mix => json!({"mix": [{"dataset": "d", "weight": 1}]}),
        DatasetKind::RandomMultiTurn | DatasetKind::ToolCalls => json!({"turns": 2}),
        DatasetKind::RandomImages => json!({"width": 4, "height": 3}),
        DatasetKind::RandomRerank => json!({"query_tokens": 5}),
        DatasetKind::Lines
        | DatasetKind::Jsonl
        | DatasetKind::Sharegpt
        | DatasetKind::Conversations
        | DatasetKind::Trace
        | DatasetKind::Images
        | DatasetKind::Embedding
        | DatasetKind::Rerank => json!({"path": "f"}),
    };
    let mut table = required;
    table["kind"] = json!(kind_name(kind));
    table
}

fn spec(v: Value) -> DatasetSpec {
    serde_json::from_value(v).unwrap()
}

fn typed(v: Value) -> DatasetPlan {
    DatasetPlan::from_spec(&spec(v)).unwrap()
}

#[test]
fn every_kind_converts_to_its_own_variant() {
    for kind in KINDS {
        let plan = DatasetPlan::from_spec(&spec(minimal(kind)))
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(plan.kind(), kind);
        assert!(missing_keys(&spec(minimal(kind))).is_empty(), "{kind:?}");
    }
}

#[test]
fn a_missing_required_key_is_named() {
    for kind in KINDS {
        let mut table = minimal(kind);
        let key = table
            .as_object()
            .and_then(|m| m.keys().find(|k| *k != "kind").cloned())
            .unwrap();
        table.as_object_mut().unwrap().remove(&key);
        let err = DatasetPlan::from_spec(&spec(table)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("dataset kind `{}` needs the key `{key}`", kind_name(kind))
        );
    }
    // Every missing key is listed, for validation to report them all.
    let both = spec(json!({"kind": "random_images"}));
    assert_eq!(missing_keys(&both), ["width", "height"]);
    let misplaced = spec(json!({"kind": "random", "input_tokens": 8, "path": "x"}));
    assert!(matches!(
        DatasetPlan::from_spec(&misplaced),
        Err(DatasetPlanError::NotApplicable { key, .. }) if key == "path"
    ));
}

#[test]
fn defaults_are_resolved() {
    let random = typed(minimal(DatasetKind::Random));
    assert_eq!(
        random,
        DatasetPlan::Random {
            input: TokenRange::Fixed(8),
            prefix_tokens: 0,
            groups: super::PrefixGroups::default(),
        }
    );
    let DatasetPlan::RandomMultiTurn(m) = typed(minimal(DatasetKind::RandomMultiTurn)) else {
        panic!()
    };
    assert_eq!(m.user_tokens, TokenRange::Fixed(64));
    assert_eq!(m.think_time, Duration::ZERO);
    assert_eq!((m.prefix_tokens, m.assistant_tokens), (0, None));
    let DatasetPlan::Trace(t) = typed(minimal(DatasetKind::Trace)) else {
        panic!()
    };
    assert_eq!((t.speed, t.match_output_length), (1.0, false));
    assert_eq!(
        typed(minimal(DatasetKind::RandomImages)),
        DatasetPlan::RandomImages {
            width: 4,
            height: 3,
            format: "png".into(),
            images_per_request: 1,
            text_tokens: None
        }
    );
    assert_eq!(
        typed(minimal(DatasetKind::RandomEmbedding)),
        DatasetPlan::RandomEmbedding {
            input: TokenRange::Fixed(8),
            batch_size: 1
        }
    );
    assert_eq!(
        typed(minimal(DatasetKind::RandomRerank)),
        DatasetPlan::RandomRerank {
            query: TokenRange::Fixed(5),
            num_documents: None,
            document_length_ratio: 1.0
        }
    );
    let lines = typed(minimal(DatasetKind::Lines));
    let select = lines.select().unwrap();
    assert_eq!(select.prefix_role, PrefixRole::System);
    assert_eq!(select.input_len_mode, InputLenMode::Cap);
    // Values written are kept.
    let conv = typed(
        json!({"kind": "conversations", "path": "c", "turns": {"min": 1, "max": 3}, "think_time": "250ms", "echo_reasoning": true}),
    );
    assert_eq!(
        conv,
        DatasetPlan::Conversations {
            path: "c".into(),
            think_time: Duration::from_millis(250),
            max_turns: Some(3),
            echo_reasoning: true,
        }
    );
}

#[test]
fn exact_lengths_need_a_tokenizer() {
    assert_eq!(
        typed(minimal(DatasetKind::Random)).needs_tokenizer(),
        Some("dataset kind `random`")
    );
    assert_eq!(typed(minimal(DatasetKind::Lines)).needs_tokenizer(), None);
    let cut = json!({"kind": "lines", "path": "f", "max_input_tokens": 9});
    assert_eq!(
        typed(cut.clone()).needs_tokenizer(),
        Some("`max_input_tokens`")
    );
    assert_eq!(spec_needs_tokenizer(&spec(cut)), Some("`max_input_tokens`"));
    assert_eq!(
        typed(minimal(DatasetKind::RandomEmbedding)).needs_tokenizer(),
        None
    );
}

/// A plan whose dataset lacks a required key is refused at validation, located at the
/// dataset's `kind`.
#[test]
fn a_missing_key_is_a_located_plan_error() {
    let text = "[plan]\nname = \"t\"\n\n[endpoints.e]\nbase_url = \"sim://e\"\n\n\
                [models.m]\n\n[datasets.d]\nkind = \"random_multi_turn\"\n";
    let path = std::path::Path::new("/nowhere/plan.toml");
    let mut files = std::collections::BTreeMap::new();
    files.insert(path.display().to_string(), text.to_string());
    let env = |_: &str| None;
    let opts = crate::plan::LoadOptions {
        files: Some(&files),
        ..crate::plan::LoadOptions::new(Vec::new(), &env)
    };
    let report = crate::plan::load_plan(path, &opts).unwrap_err();
    let shown = report.render();
    assert!(
        shown.contains("dataset `d`: kind `random_multi_turn` needs `turns`"),
        "{shown}"
    );
    assert!(shown.contains("plan.toml:10:"), "{shown}");
}
