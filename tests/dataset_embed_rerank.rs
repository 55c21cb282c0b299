//! `random_embedding` and `random_rerank` with the SmolLM2 fixture tokenizer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod dataset_support;

use std::path::Path;
use std::sync::Arc;

use dataset_support::materialize;
use perfplan::api::Prompt;
use perfplan::dataset::{DatasetContext, Materialized};
use perfplan::plan::spec::{ChatTemplateMode, DatasetSpec};
use perfplan::tokenize::Tokenizer;
use serde_json::json;
use sha2::{Digest, Sha256};

fn tokenizer() -> Arc<Tokenizer> {
    Tokenizer::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")).unwrap()
}

fn run(tok: &Arc<Tokenizer>, spec: serde_json::Value, count: usize) -> Materialized {
    let spec: DatasetSpec = serde_json::from_value(spec).unwrap();
    let ctx = DatasetContext {
        base_dir: ".".into(),
        tokenizer: Some(Arc::clone(tok)),
        chat: true,
        tokenize_prompt: false,
        chat_template: ChatTemplateMode::Auto,
        seed: 3,
        first: 0,
        count,
        template_kwargs: Default::default(),
        classes: Vec::new(),
    };
    materialize(&spec, &ctx).unwrap()
}

fn hash(m: &Materialized) -> String {
    let prompts: Vec<&Prompt> = m.items.iter().map(|i| &i.prompt).collect();
    let digest = Sha256::digest(serde_json::to_vec(&prompts).unwrap());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[test]
fn embedding_batches_hold_inputs_of_exact_length() {
    let tok = tokenizer();
    let m = run(
        &tok,
        json!({"kind": "random_embedding", "input_tokens": 128, "batch_size": 3}),
        10,
    );
    assert_eq!(m.items.len(), 10);
    for item in &m.items {
        let Prompt::Embedding(inputs) = &item.prompt else {
            panic!("{:?}", item.prompt)
        };
        assert_eq!(inputs.len(), 3);
        for input in inputs {
            assert_eq!(tok.count(input, true).unwrap(), 128);
        }
        assert_eq!(item.target_input_tokens, Some(384));
        assert_eq!(item.client_input_tokens, Some(384));
    }
    assert_eq!(m.stats.missed_target, 0);
    assert_eq!(hash(&m), "e20a5ca6a9fe2599");
}

#[test]
fn rerank_requests_have_a_query_and_longer_documents() {
    let tok = tokenizer();
    let m = run(
        &tok,
        json!({"kind": "random_rerank", "query_tokens": 32, "num_documents": 4, "document_length_ratio": 2.0}),
        5,
    );
    for item in &m.items {
        let Prompt::Rerank { query, documents } = &item.prompt else {
            panic!()
        };
        assert_eq!(tok.count(query, true).unwrap(), 32);
        assert_eq!(documents.len(), 4);
        assert!(documents.iter().all(|d| tok.count(d, true).unwrap() == 64));
        assert_eq!(item.client_input_tokens, Some(32 + 4 * 64));
    }
    assert_eq!(hash(&m), "6c52e7a685a886bd");
}

#[test]
fn rerank_needs_query_tokens() {
    let tok = tokenizer();
    let spec: DatasetSpec = serde_json::from_value(json!({"kind": "random_rerank"})).unwrap();
    let ctx = DatasetContext {
        base_dir: ".".into(),
        tokenizer: Some(tok),
        chat: false,
        tokenize_prompt: false,
        chat_template: ChatTemplateMode::Auto,
        seed: 1,
        first: 0,
        count: 1,
        template_kwargs: Default::default(),
        classes: Vec::new(),
    };
    let err = materialize(&spec, &ctx).unwrap_err();
    assert!(err.to_string().contains("query_tokens"), "{err}");
}

#[test]
fn embedding_and_rerank_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("e.txt"), "alpha\nbeta\ngamma\n").unwrap();
    std::fs::write(
        dir.path().join("r.jsonl"),
        "{\"query\": \"q1\", \"documents\": [\"a\", \"b\", \"c\"]}\n{\"query\": \"q2\", \"documents\": [\"d\"]}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("bad.jsonl"), "{\"query\": \"q\"}\n").unwrap();
    let tok = tokenizer();
    let ctx = |count| DatasetContext {
        base_dir: dir.path().to_path_buf(),
        tokenizer: Some(Arc::clone(&tok)),
        chat: false,
        tokenize_prompt: false,
        chat_template: ChatTemplateMode::Auto,
        seed: 3,
        first: 0,
        count,
        template_kwargs: Default::default(),
        classes: Vec::new(),
    };
    let spec = |v| serde_json::from_value::<DatasetSpec>(v).unwrap();
    let m = materialize(
        &spec(json!({"kind": "embedding", "path": "e.txt", "batch_size": 2})),
        &ctx(4),
    )
    .unwrap();
    assert_eq!(m.items.len(), 4);
    assert!(m.warnings[0].contains("repeat"), "{:?}", m.warnings);
    let Prompt::Embedding(inputs) = &m.items[0].prompt else {
        panic!()
    };
    assert_eq!(inputs.len(), 2);
    let expected: usize = inputs.iter().map(|t| tok.count(t, true).unwrap()).sum();
    assert_eq!(m.items[0].client_input_tokens, Some(expected as u32));

    let m = materialize(
        &spec(json!({"kind": "rerank", "path": "r.jsonl", "num_documents": 2})),
        &ctx(2),
    )
    .unwrap();
    for item in &m.items {
        let Prompt::Rerank { documents, .. } = &item.prompt else {
            panic!()
        };
        assert!(documents.len() <= 2);
    }
    let err = materialize(
        &spec(json!({"kind": "rerank", "path": "bad.jsonl"})),
        &ctx(1),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("bad.jsonl:1: no `documents` array"),
        "{err}"
    );
}
