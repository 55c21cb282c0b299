//! File datasets (`prompt`, `lines`, `jsonl`, `sharegpt`) with the SmolLM2 fixture tokenizer:
//! golden hashes, length rules (`prefix_file`, `target_input_len`, `input_len_mode`, filters)
//! and located errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod dataset_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dataset_support::materialize;
use perfplan::api::Prompt;
use perfplan::dataset::{DatasetContext, DatasetError, Materialized};
use perfplan::plan::spec::{ChatTemplateMode, DatasetSpec};
use perfplan::tokenize::Tokenizer;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn tokenizer() -> Arc<Tokenizer> {
    Tokenizer::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")).unwrap()
}

fn spec(v: Value) -> DatasetSpec {
    serde_json::from_value(v).unwrap()
}

fn ctx(
    dir: &Path,
    tok: Option<&Arc<Tokenizer>>,
    chat: bool,
    ids: bool,
    count: usize,
) -> DatasetContext {
    DatasetContext {
        base_dir: dir.to_path_buf(),
        tokenizer: tok.cloned(),
        chat,
        tokenize_prompt: ids,
        chat_template: ChatTemplateMode::Auto,
        seed: 42,
        first: 0,
        count,
        template_kwargs: Default::default(),
        classes: Vec::new(),
    }
}

fn hash(m: &Materialized) -> String {
    let prompts: Vec<&Prompt> = m.items.iter().map(|i| &i.prompt).collect();
    let digest = Sha256::digest(serde_json::to_vec(&prompts).unwrap());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The count a chat server sees for a prompt.
fn chat_count(tok: &Tokenizer, p: &Prompt) -> u32 {
    let n = match p {
        Prompt::Text(t) => tok.count_chat(&[json!({"role": "user", "content": t})]),
        Prompt::Messages(m) => tok.count_chat(m),
        other => panic!("{other:?}"),
    };
    n.unwrap() as u32
}

/// Plain English-like text of about `sentences` × 12 tokens, deterministic.
fn long_text(sentences: usize) -> String {
    let words = [
        "river", "stone", "window", "garden", "morning", "letter", "market", "silver", "winter",
        "harbor", "lantern", "meadow", "engine", "bridge", "candle", "forest",
    ];
    (0..sentences)
        .map(|i| {
            format!(
                "The {} near the {} was {} by the {} in chapter {}.",
                words[i % 16],
                words[(i * 7 + 3) % 16],
                ["quiet", "bright", "old", "open"][i % 4],
                words[(i * 5 + 1) % 16],
                i
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn prompt_inline_and_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let s = spec(json!({"kind": "prompt", "text": "Write a haiku about the sea."}));
    let m = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 5)).unwrap();
    assert_eq!(m.items.len(), 5);
    assert!(m.items.iter().all(|i| i.prompt == m.items[0].prompt));
    assert_eq!(
        m.items[0].client_input_tokens,
        Some(chat_count(&tok, &m.items[0].prompt))
    );
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert_eq!(hash(&m), "7ae3ee35210ff134");

    write(dir.path(), "p.txt", "Write a haiku about the sea.");
    let s = spec(json!({"kind": "prompt", "text": "@p.txt"}));
    let from_file = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 5)).unwrap();
    assert_eq!(from_file, m);

    let s = spec(json!({"kind": "prompt", "text": "@missing.txt"}));
    let err = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 1)).unwrap_err();
    assert!(err.to_string().contains("missing.txt"), "{err}");
}

#[test]
fn lines_cycle_with_a_warning_and_work_without_a_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "l.txt",
        "first prompt\r\n\nsecond prompt\nthird prompt\n",
    );
    let s = spec(json!({"kind": "lines", "path": "l.txt"}));
    let m = materialize(&s, &ctx(dir.path(), None, true, false, 7)).unwrap();
    assert_eq!(m.items.len(), 7);
    assert_eq!(m.stats.distinct_prompts, 3);
    assert_eq!(m.stats.source_prompts, 3);
    assert!(
        m.warnings.iter().any(|w| w.contains("prompts repeat")),
        "{:?}",
        m.warnings
    );
    assert!(m.items.iter().all(|i| i.client_input_tokens.is_none()));
    assert_eq!(m.items[3].prompt, m.items[0].prompt);
    assert_eq!(hash(&m), "401d933f9b26d777");
    let other_seed = materialize(
        &s,
        &DatasetContext {
            seed: 7,
            ..ctx(dir.path(), None, true, false, 3)
        },
    )
    .unwrap();
    assert_ne!(hash(&other_seed), hash(&m));
}

#[test]
fn empty_files_and_missing_keys_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "empty.txt", "\n  \n");
    for kind in ["lines", "jsonl", "sharegpt"] {
        let s = spec(json!({"kind": kind, "path": "empty.txt"}));
        let err = materialize(&s, &ctx(dir.path(), None, true, false, 1)).unwrap_err();
        assert!(matches!(err, DatasetError::Empty { .. }), "{err:?}");
        assert!(err.to_string().contains("empty.txt"), "{err}");
        let s = spec(json!({"kind": kind}));
        let err = materialize(&s, &ctx(dir.path(), None, true, false, 1)).unwrap_err();
        assert!(err.to_string().contains("`path`"), "{err}");
    }
}

#[test]
fn jsonl_reads_prompts_messages_and_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    write(
        dir.path(),
        "d.jsonl",
        concat!(
            "{\"prompt\": \"What is Rust?\"}\n",
            "{\"question\": \"Why is the sky blue?\", \"answer\": \"Rayleigh\"}\n",
            "\n",
            "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"}]}\n",
            "{\"model\": \"m\", \"max_tokens\": 5, \"messages\": [{\"role\": \"user\", \"content\": \"Body\"}]}\n",
        ),
    );
    let s = spec(json!({"kind": "jsonl", "path": "d.jsonl"}));
    let m = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 4)).unwrap();
    let kinds: std::collections::BTreeSet<&str> = m
        .items
        .iter()
        .map(|i| match &i.prompt {
            Prompt::Text(_) => "text",
            Prompt::Messages(_) => "messages",
            Prompt::Body(_) => "body",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["body", "messages", "text"]
    );
    for item in &m.items {
        if let Prompt::Text(_) | Prompt::Messages(_) = item.prompt {
            assert_eq!(
                item.client_input_tokens,
                Some(chat_count(&tok, &item.prompt))
            );
        }
    }
    assert_eq!(hash(&m), "2d1d9e9e7959b263");

    // token ids: text and messages become ids (messages through the template)
    let m = materialize(&s, &ctx(dir.path(), Some(&tok), true, true, 4)).unwrap();
    assert!(m
        .items
        .iter()
        .any(|i| matches!(i.prompt, Prompt::TokenIds(_))));
    assert!(
        m.warnings.iter().any(|w| w.contains("bodies")),
        "{:?}",
        m.warnings
    );
}

#[test]
fn jsonl_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.jsonl",
        "{\"prompt\": \"ok\"}\n\n{\"prompt\": oops}\n",
    );
    let s = spec(json!({"kind": "jsonl", "path": "bad.jsonl"}));
    let err = materialize(&s, &ctx(dir.path(), None, true, false, 1)).unwrap_err();
    assert!(matches!(err, DatasetError::Json { line: 3, .. }), "{err:?}");
    assert!(
        err.to_string().ends_with("bad.jsonl:3: malformed JSON"),
        "{err}"
    );

    write(
        dir.path(),
        "nofield.jsonl",
        "{\"prompt\": \"ok\"}\n{\"text\": \"x\"}\n",
    );
    let s = spec(json!({"kind": "jsonl", "path": "nofield.jsonl"}));
    let err = materialize(&s, &ctx(dir.path(), None, true, false, 1)).unwrap_err();
    assert!(
        err.to_string().contains("nofield.jsonl:2: no prompt found"),
        "{err}"
    );
    let s = spec(json!({"kind": "jsonl", "path": "nofield.jsonl", "field": "text"}));
    let err = materialize(&s, &ctx(dir.path(), None, true, false, 1)).unwrap_err();
    assert!(
        err.to_string().contains("nofield.jsonl:1: no field `text`"),
        "{err}"
    );

    write(
        dir.path(),
        "msgs.jsonl",
        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n",
    );
    let s = spec(json!({"kind": "jsonl", "path": "msgs.jsonl", "target_input_len": 100}));
    let tok = tokenizer();
    let err = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 1)).unwrap_err();
    assert!(err.to_string().contains("msgs.jsonl:1:"), "{err}");
}

#[test]
fn sharegpt_takes_the_first_human_turn_and_records_the_answer_length() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let data = json!([
        {"id": "a", "conversations": [
            {"from": "human", "value": "Tell me about the moon."},
            {"from": "gpt", "value": "The moon is Earth's only natural satellite."}]},
        {"id": "b", "conversations": [{"from": "gpt", "value": "no question"}]},
        {"id": "c", "conversations": [
            {"from": "human", "value": "Name three colours."},
            {"from": "gpt", "value": "Red, green and blue."},
            {"from": "human", "value": "More?"}]}
    ]);
    write(dir.path(), "sg.json", &data.to_string());
    let s = spec(json!({"kind": "sharegpt", "path": "sg.json"}));
    let m = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap();
    assert_eq!(m.stats.source_prompts, 2);
    for item in &m.items {
        let Prompt::Text(q) = &item.prompt else {
            panic!()
        };
        let answer = if q.contains("moon") {
            "The moon is Earth's only natural satellite."
        } else {
            "Red, green and blue."
        };
        assert_eq!(
            item.output_tokens,
            Some(tok.count(answer, false).unwrap() as u32)
        );
    }
    assert_eq!(hash(&m), "e738caa7c2439765");
}

#[test]
fn prefix_file_fills_every_request_to_exactly_8192_tokens_as_a_system_message() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    write(dir.path(), "book.txt", &long_text(1200));
    let questions: Vec<String> = (0..20)
        .map(|i| format!("Question {i}: {}?", long_text(i % 5 + 1)))
        .collect();
    write(dir.path(), "q.txt", &questions.join("\n"));
    let s = spec(
        json!({"kind": "lines", "path": "q.txt", "prefix_file": "book.txt",
                        "target_input_len": 8192, "prefix_role": "system"}),
    );
    let m = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 20)).unwrap();
    assert_eq!(hash(&m), "4712447eac940764");
    assert!(
        m.warnings.iter().all(|w| !w.contains("repeated")),
        "{:?}",
        m.warnings
    );
    let mut system_texts = Vec::new();
    for item in &m.items {
        let Prompt::Messages(msgs) = &item.prompt else {
            panic!("{:?}", item.prompt)
        };
        assert_eq!(msgs[0]["role"], "system");
        assert_eq!(chat_count(&tok, &item.prompt), 8192);
        assert_eq!(item.client_input_tokens, Some(8192));
        assert_eq!(item.target_input_tokens, Some(8192));
        system_texts.push(msgs[0]["content"].as_str().unwrap().to_string());
    }
    // every prefix is the start of the same file text
    let shortest = system_texts.iter().min_by_key(|t| t.len()).unwrap();
    assert!(system_texts
        .iter()
        .all(|t| t.starts_with(shortest.as_str())));
    assert_eq!(m.stats.missed_target, 0);
}

#[test]
fn prefix_file_user_role_completions_and_token_ids_are_exact_too() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    write(dir.path(), "book.txt", &long_text(300));
    write(
        dir.path(),
        "q.txt",
        "What is the capital of France?\nName a river.\n",
    );
    let base = json!({"kind": "lines", "path": "q.txt", "prefix_file": "book.txt", "target_input_len": 2048});
    let mut user = base.clone();
    user["prefix_role"] = json!("user");
    let m = materialize(&spec(user), &ctx(dir.path(), Some(&tok), true, false, 4)).unwrap();
    for item in &m.items {
        let Prompt::Text(t) = &item.prompt else {
            panic!()
        };
        assert!(t.starts_with("The river"));
        assert_eq!(chat_count(&tok, &item.prompt), 2048);
    }
    let m = materialize(
        &spec(base.clone()),
        &ctx(dir.path(), Some(&tok), false, false, 4),
    )
    .unwrap();
    assert!(
        m.warnings.iter().any(|w| w.contains("needs a chat API")),
        "{:?}",
        m.warnings
    );
    for item in &m.items {
        let Prompt::Text(t) = &item.prompt else {
            panic!()
        };
        assert_eq!(tok.count(t, true).unwrap(), 2048);
    }
    let m = materialize(&spec(base), &ctx(dir.path(), Some(&tok), false, true, 4)).unwrap();
    for item in &m.items {
        let Prompt::TokenIds(ids) = &item.prompt else {
            panic!()
        };
        assert_eq!(ids.len(), 2048);
    }
}

#[test]
fn a_short_prefix_file_is_tiled_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    write(dir.path(), "short.txt", &long_text(20));
    write(dir.path(), "q.txt", "Question?\n");
    let s = spec(
        json!({"kind": "lines", "path": "q.txt", "prefix_file": "short.txt", "target_input_len": 1000}),
    );
    let m = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap();
    let warning = m
        .warnings
        .iter()
        .find(|w| w.contains("repeated"))
        .expect("tiling warning");
    assert!(warning.contains("short.txt"), "{warning}");
    assert!(m.items.iter().all(|i| chat_count(&tok, &i.prompt) == 1000));

    let s = spec(json!({"kind": "lines", "path": "q.txt", "prefix_file": "short.txt"}));
    let err = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap_err();
    assert!(err.to_string().contains("target_input_len"), "{err}");
}

#[test]
fn input_len_mode_cuts_long_prompts_and_keeps_or_drops_short_ones_and_filters_apply() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let long = long_text(40);
    write(dir.path(), "mix.txt", &format!("Short question?\n{long}\n"));
    let cap = spec(json!({"kind": "lines", "path": "mix.txt", "target_input_len": 200}));
    let m = materialize(&cap, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap();
    let lens: Vec<(Option<u32>, u32)> = m
        .items
        .iter()
        .map(|i| (i.target_input_tokens, chat_count(&tok, &i.prompt)))
        .collect();
    assert!(lens.contains(&(Some(200), 200)), "{lens:?}");
    assert!(
        lens.iter().any(|(t, n)| t.is_none() && *n < 200),
        "{lens:?}"
    );

    let drop = spec(
        json!({"kind": "lines", "path": "mix.txt", "target_input_len": 200, "input_len_mode": "drop"}),
    );
    let m = materialize(&drop, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap();
    assert_eq!(m.stats.distinct_prompts, 1);
    assert_eq!(m.stats.filtered_out, 1);
    // As EvalScope: the long prompt is cut to the target, the short one is left out, so
    // every request is exactly the target.
    for i in &m.items {
        assert_eq!(i.target_input_tokens, Some(200));
        assert_eq!(chat_count(&tok, &i.prompt), 200);
    }

    let min = spec(json!({"kind": "lines", "path": "mix.txt", "min_input_tokens": 100}));
    let m = materialize(&min, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap();
    assert!(m
        .items
        .iter()
        .all(|i| i.client_input_tokens.unwrap() >= 100));

    let none = spec(json!({"kind": "lines", "path": "mix.txt", "min_input_tokens": 5000}));
    let err = materialize(&none, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap_err();
    assert!(matches!(err, DatasetError::AllFiltered { .. }), "{err:?}");
    assert!(err.to_string().contains("min_input_tokens 5000"), "{err}");

    let err = materialize(&min, &ctx(dir.path(), None, true, false, 2)).unwrap_err();
    assert!(
        matches!(err, DatasetError::NeedsTokenizer { .. }),
        "{err:?}"
    );
}

#[test]
fn a_template_error_on_a_messages_line_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2/tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("chat_template.jinja"),
        "{% for m in messages %}{% if m.role == 'system' and not loop.first %}{{ raise_exception('system message must come first') }}{% endif %}{{ m.content }}{% endfor %}",
    )
    .unwrap();
    let tok = Tokenizer::load(dir.path()).unwrap();
    write(
        dir.path(),
        "m.jsonl",
        "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}]}\n{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"system\", \"content\": \"b\"}]}\n",
    );
    let s = spec(json!({"kind": "jsonl", "path": "m.jsonl"}));
    let err = materialize(&s, &ctx(dir.path(), Some(&tok), true, false, 2)).unwrap_err();
    assert!(err.to_string().ends_with("m.jsonl:2"), "{err}");
    let chain = format!("{:?}", error_chain(&err));
    assert!(chain.contains("system message must come first"), "{chain}");
}

fn error_chain(e: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push(s.to_string());
        cur = s.source();
    }
    out
}
