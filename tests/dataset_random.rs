//! `kind = "random"` with the SmolLM2 fixture tokenizer: exact lengths in every prompt mode,
//! a shared prefix, determinism from the seed, speed, and errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod dataset_support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use dataset_support::materialize;
use perfplan::api::Prompt;
use perfplan::dataset::{DatasetContext, DatasetError, Materialized};
use perfplan::plan::spec::{ChatTemplateMode, DatasetSpec};
use perfplan::tokenize::Tokenizer;
use serde_json::json;
use sha2::{Digest, Sha256};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

/// One load per test binary: tests share it, none depends on another.
fn tokenizer() -> Arc<Tokenizer> {
    static TOKENIZER: OnceLock<Arc<Tokenizer>> = OnceLock::new();
    Arc::clone(TOKENIZER.get_or_init(|| Tokenizer::load(&fixture()).unwrap()))
}

fn spec(v: serde_json::Value) -> DatasetSpec {
    serde_json::from_value(v).unwrap()
}

fn ctx(tok: &Arc<Tokenizer>, chat: bool, ids: bool, seed: u64, count: usize) -> DatasetContext {
    DatasetContext {
        base_dir: fixture(),
        tokenizer: Some(Arc::clone(tok)),
        chat,
        tokenize_prompt: ids,
        chat_template: ChatTemplateMode::Auto,
        seed,
        first: 0,
        count,
        template_kwargs: Default::default(),
        classes: Vec::new(),
    }
}

fn text(p: &Prompt) -> &str {
    match p {
        Prompt::Text(t) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

fn hash(m: &Materialized) -> String {
    let prompts: Vec<&Prompt> = m.items.iter().map(|i| &i.prompt).collect();
    let digest = Sha256::digest(serde_json::to_vec(&prompts).unwrap());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn random_1k() -> DatasetSpec {
    spec(json!({"kind": "random", "input_tokens": 1024, "prefix_tokens": 512}))
}

#[test]
fn chat_prompts_count_exactly_1024_with_the_template() {
    let tok = tokenizer();
    let m = materialize(&random_1k(), &ctx(&tok, true, false, 7, 100)).unwrap();
    assert_eq!(m.items.len(), 100);
    let mut exact = 0;
    for item in &m.items {
        // recount independently, the way the server does
        let n = tok
            .count_chat(&[json!({"role": "user", "content": text(&item.prompt)})])
            .unwrap() as u32;
        assert_eq!(item.client_input_tokens, Some(n));
        assert_eq!(item.target_input_tokens, Some(1024));
        assert!(n.abs_diff(1024) <= 2, "{n}");
        exact += usize::from(n == 1024);
    }
    assert!(exact >= 99, "only {exact}/100 exact");
    assert_eq!(m.stats.targeted, 100);
    assert_eq!(m.stats.missed_target, 100 - exact);
    eprintln!("chat: {exact}/100 exact, max miss {}", m.stats.max_abs_miss);
}

#[test]
fn token_id_prompts_are_exactly_1024_ids() {
    let tok = tokenizer();
    let m = materialize(&random_1k(), &ctx(&tok, true, true, 7, 50)).unwrap();
    let first = match &m.items[0].prompt {
        Prompt::TokenIds(ids) => ids.clone(),
        other => panic!("{other:?}"),
    };
    for item in &m.items {
        let Prompt::TokenIds(ids) = &item.prompt else {
            panic!("expected ids")
        };
        assert_eq!(ids.len(), 1024);
        assert_eq!(item.client_input_tokens, Some(1024));
        // the ids are the canonical tokenization of their text, prefix shared
        assert_eq!(tok.encode(&tok.decode(ids).unwrap(), true).unwrap(), *ids);
        assert_eq!(ids[..512], first[..512]);
    }
    assert_eq!(m.stats.missed_target, 0);
}

#[test]
fn completions_text_counts_exactly_with_special_tokens() {
    let tok = tokenizer();
    let m = materialize(&random_1k(), &ctx(&tok, false, false, 3, 20)).unwrap();
    for item in &m.items {
        assert_eq!(tok.count(text(&item.prompt), true).unwrap(), 1024);
    }
}

/// Length of the prefix all sequences share.
fn common_prefix<T: PartialEq>(seqs: &[Vec<T>]) -> usize {
    let first = &seqs[0];
    seqs[1..].iter().fold(first.len(), |n, s| {
        n.min(s.iter().zip(first).take_while(|(a, b)| a == b).count())
    })
}

#[test]
fn the_prefix_is_byte_identical_across_a_run_and_differs_between_seeds() {
    let tok = tokenizer();
    let run = |seed: u64, prefix: u32| {
        let s = spec(json!({"kind": "random", "input_tokens": 1024, "prefix_tokens": prefix}));
        let m = materialize(&s, &ctx(&tok, true, false, seed, 20)).unwrap();
        let texts: Vec<Vec<u8>> = m
            .items
            .iter()
            .map(|i| text(&i.prompt).as_bytes().to_vec())
            .collect();
        let shared = String::from_utf8(texts[0][..common_prefix(&texts)].to_vec()).unwrap();
        // the tokens every request starts with, as the server sees them
        let ids: Vec<Vec<u32>> = m
            .items
            .iter()
            .map(|i| {
                tok.encode_chat(&[json!({"role": "user", "content": text(&i.prompt)})])
                    .unwrap()
            })
            .collect();
        (shared, common_prefix(&ids))
    };
    let (shared, tokens) = run(1, 512);
    assert_eq!(
        tokens, 512,
        "the server sees 512 shared tokens (template opening included)"
    );
    assert!(tok.count(&shared, false).unwrap() > 450);
    let (unshared, tokens) = run(1, 0);
    assert!(tok.count(&unshared, false).unwrap() <= 1, "{unshared:?}");
    assert!(tokens < 40, "only the template opening is shared: {tokens}");
    assert_ne!(run(2, 512).0, shared);

    // token ids: the shared ids are exactly the prefix
    let s = spec(json!({"kind": "random", "input_tokens": 1024, "prefix_tokens": 512}));
    let m = materialize(&s, &ctx(&tok, false, true, 1, 20)).unwrap();
    let ids: Vec<Vec<u32>> = m
        .items
        .iter()
        .map(|i| match &i.prompt {
            Prompt::TokenIds(ids) => ids.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(common_prefix(&ids), 512);
}

#[test]
fn same_seed_gives_byte_identical_prompts_golden() {
    let tok = tokenizer();
    let a = materialize(&random_1k(), &ctx(&tok, true, false, 42, 16)).unwrap();
    let b = materialize(&random_1k(), &ctx(&tok, true, false, 42, 16)).unwrap();
    assert_eq!(a, b);
    let c = materialize(&random_1k(), &ctx(&tok, true, false, 43, 16)).unwrap();
    assert_ne!(hash(&a), hash(&c));
    // fewer requests give the first prompts of a longer run
    let d = materialize(&random_1k(), &ctx(&tok, true, false, 42, 4)).unwrap();
    assert_eq!(d.items[..], a.items[..4]);
    assert_eq!(hash(&a), "d7452f249da1276b");
}

#[test]
fn ranges_draw_each_target_and_meet_it() {
    let tok = tokenizer();
    let s = spec(
        json!({"kind": "random", "input_tokens": {"min": 64, "max": 512}, "prefix_tokens": 32}),
    );
    let m = materialize(&s, &ctx(&tok, true, false, 9, 100)).unwrap();
    let targets: std::collections::BTreeSet<u32> = m
        .items
        .iter()
        .map(|i| i.target_input_tokens.unwrap())
        .collect();
    assert!(targets.len() > 50);
    assert!(targets.iter().all(|t| (64..=512).contains(t)));
    for item in &m.items {
        assert_eq!(item.client_input_tokens, item.target_input_tokens);
    }
}

#[test]
fn a_thousand_1k_prompts_are_fast() {
    let tok = tokenizer();
    tok.word_pool(); // built once per tokenizer, not per run
    let started = Instant::now();
    let cpu = process_cpu_secs();
    let m = materialize(&random_1k(), &ctx(&tok, true, false, 11, 1000)).unwrap();
    let elapsed = started.elapsed();
    eprintln!(
        "1000 chat prompts of 1024 tokens in {elapsed:?} wall, {:.2} s CPU (all threads of the \
         test process) ({} missed)",
        process_cpu_secs() - cpu,
        m.stats.missed_target
    );
    assert_eq!(m.items.len(), 1000);
    assert!(elapsed.as_secs() < 30, "{elapsed:?}");
}

/// User + system CPU seconds of this process (Linux; 0 elsewhere).
fn process_cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let after_name = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

#[test]
fn errors_name_what_is_wrong() {
    let tok = tokenizer();
    let mut c = ctx(&tok, true, false, 1, 4);
    c.tokenizer = None;
    let err = materialize(&random_1k(), &c).unwrap_err();
    assert!(matches!(err, DatasetError::NeedsTokenizer { .. }));
    assert!(err.to_string().contains("tokenizer"), "{err}");

    let s = spec(json!({"kind": "random", "input_tokens": 100, "prefix_tokens": 200}));
    let err = materialize(&s, &ctx(&tok, true, false, 1, 4)).unwrap_err();
    assert!(err.to_string().contains("prefix_tokens (200)"), "{err}");

    let s = spec(json!({"kind": "random"}));
    let err = materialize(&s, &ctx(&tok, true, false, 1, 4)).unwrap_err();
    assert!(err.to_string().contains("input_tokens"), "{err}");

    let s = spec(json!({"kind": "trace", "path": "x.jsonl"}));
    let err = materialize(&s, &ctx(&tok, true, false, 1, 4)).unwrap_err();
    assert_eq!(err.to_string(), "dataset kind `trace` is not supported yet");
}

#[test]
fn chat_template_on_without_a_template_is_an_error_and_auto_warns() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let tok = Tokenizer::load(dir.path()).unwrap();
    let s = spec(json!({"kind": "random", "input_tokens": 64}));
    let mut c = ctx(&tok, true, false, 1, 2);
    c.chat_template = ChatTemplateMode::On;
    let err = materialize(&s, &c).unwrap_err();
    assert!(format!("{:?}", err).contains("NoChatTemplate"), "{err:?}");
    c.chat_template = ChatTemplateMode::Auto;
    let m = materialize(&s, &c).unwrap();
    assert!(
        m.warnings[0].contains("without a chat template"),
        "{:?}",
        m.warnings
    );
    assert_eq!(tok.count(text(&m.items[0].prompt), false).unwrap(), 64);
}

/// Gemma 3 (262k vocabulary), only when PERFPLAN_TOKENIZER points to its folder.
#[test]
fn exact_with_the_tokenizer_of_perfplan_tokenizer() {
    let Ok(path) = std::env::var("PERFPLAN_TOKENIZER") else {
        eprintln!("skipped: PERFPLAN_TOKENIZER not set");
        return;
    };
    let tok = Tokenizer::load(Path::new(&path)).unwrap();
    for (chat, ids) in [(true, false), (false, false), (true, true)] {
        let m = materialize(&random_1k(), &ctx(&tok, chat, ids, 5, 100)).unwrap();
        let exact = m
            .items
            .iter()
            .filter(|i| i.client_input_tokens == Some(1024))
            .count();
        eprintln!(
            "chat={chat} ids={ids}: {exact}/100 exact, max miss {}",
            m.stats.max_abs_miss
        );
        assert!(exact >= 99 && m.stats.max_abs_miss <= 2);
    }
}

#[test]
fn prefix_groups_share_their_own_prefix_and_group_zero_is_the_one_prefix() {
    let tok = tokenizer();
    let chat_ids = |m: &Materialized| -> Vec<Vec<u32>> {
        m.items
            .iter()
            .map(|i| {
                tok.encode_chat(&[json!({"role": "user", "content": text(&i.prompt)})])
                    .unwrap()
            })
            .collect()
    };
    let grouped = spec(
        json!({"kind": "random", "input_tokens": 256, "prefix_tokens": 128,
                              "prefix_groups": 3}),
    );
    let m = materialize(&grouped, &ctx(&tok, true, false, 5, 12)).unwrap();
    let ids = chat_ids(&m);
    for g in 0..3 {
        // Round robin: requests g, g + 3, … take group g and share its whole prefix.
        let members: Vec<Vec<u32>> = ids.iter().skip(g).step_by(3).cloned().collect();
        assert_eq!(common_prefix(&members), 128, "group {g}");
    }
    // Different groups share the template's opening only.
    let opening = common_prefix(&ids[..3]);
    assert!((16..40).contains(&opening), "{opening}");
    for item in &m.items {
        assert_eq!(item.client_input_tokens, Some(256));
    }
    // Group 0 is the prefix a run without groups has, byte for byte.
    let one = spec(json!({"kind": "random", "input_tokens": 256, "prefix_tokens": 128}));
    let single = materialize(&one, &ctx(&tok, true, false, 5, 12)).unwrap();
    let single_ids = chat_ids(&single);
    assert_eq!(ids[0][..128], single_ids[0][..128]);
    assert_eq!(ids[3][..128], single_ids[5][..128]);
    // A window built alone (as a duration-only load builds them) is the same requests.
    let window = DatasetContext {
        first: 7,
        count: 3,
        ..ctx(&tok, true, false, 5, 0)
    };
    let part = materialize(&grouped, &window).unwrap();
    assert_eq!(part.items, m.items[7..10]);
    // What the planned hit ratio reads: the opening, and each group's 128 shared tokens.
    let plan = perfplan::plan::DatasetPlan::from_spec(&grouped).unwrap();
    let sharing = perfplan::dataset::sharing(&plan, &ctx(&tok, true, false, 5, 12))
        .unwrap()
        .unwrap();
    let perfplan::dataset::RunSharing::One(sharing) = sharing else {
        panic!("one dataset's sharing");
    };
    assert_eq!(sharing.prefixes, [128, 128, 128]);
    // SmolLM2's template: 24 tokens of system prompt and role markers before the user text.
    assert_eq!(sharing.lead, 24);
    assert!(opening >= 24, "{opening}");
    assert_eq!((sharing.group_of(4), sharing.group_of(9)), (1, 0));
}
