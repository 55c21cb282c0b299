//! The server's own counts of a run against the client's (`server_counts` in the run's
//! facts), against the in-process simulator whose `vllm:` counters count exactly what it
//! served: equal for a server alone with perfplan, a warm run's priming pass counted
//! apart; and the planned prefix share in the server's cache blocks (the block size from
//! its `vllm:cache_config_info`, or the endpoint's `cache_block_size`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};

use perfplan::store::Store;
use perfplan::telemetry::counts::ServerCounts;

fn tokenizer() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

/// A plan of a simulator with the SmolLM2 tokenizer (`sim` settings added), random
/// prompts of 256 tokens with a shared prefix of `prefix`, then `rest`.
fn plan(dir: &Path, endpoint: &str, sim: &str, prefix: u32, rest: &str) -> PathBuf {
    let text = format!(
        "[plan]\nname = \"counts\"\nseed = 9\n\
         [endpoints.sim]\nbase_url = \"sim://counts\"\nprefix_cache = \"on\"\n{endpoint}\n\
         [endpoints.sim.sim]\nttft_base = \"2ms\"\nitl_base = \"1ms\"\n\
         prefill_tokens_per_s = 1000000\ntokenizer = \"{tok}\"\n{sim}\n\
         [models.m]\ntokenizer = \"{tok}\"\n\
         [datasets.r]\nkind = \"random\"\ninput_tokens = 256\nprefix_tokens = {prefix}\n\
         [defaults]\noutput_tokens = 12\nignore_eos = true\n{rest}",
        tok = tokenizer().display()
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn counts_of(db: &Path) -> Vec<(perfplan::store::StoredRun, ServerCounts)> {
    let store = Store::open(db).unwrap();
    store
        .runs()
        .unwrap()
        .into_iter()
        .map(|run| {
            let counts = ServerCounts::of_facts(&run.facts).expect("server_counts stored");
            (run, counts)
        })
        .collect()
}

/// Cold and warm runs at c = 3: every counter's growth is the client's sum of usage over
/// the requests it sent in the window (warmup and measured), the cached tokens the sum of
/// `cached_tokens`; the warm run's priming pass on its own, equal too.
#[test]
fn a_server_alone_counts_what_the_client_received() {
    let dir = tempfile::tempdir().unwrap();
    let rest = "[matrix]\ncache_state = [\"cold\", \"warm\"]\n\
                load = { concurrency = 3, requests = 12, warmup = 3 }\n";
    let db = cli_support::run(
        &plan(dir.path(), "", "", 128, rest),
        &dir.path().join("out"),
    );
    let all = counts_of(&db);
    assert_eq!(all.len(), 2);
    for (run, c) in &all {
        let (s, k) = (&c.server, &c.client);
        assert_eq!(
            (k.requests, k.requests_ok, k.requests_with_usage),
            (15, 15, 15)
        );
        assert_eq!(s.requests, Some(k.requests_ok), "{}", run.id);
        assert_eq!(s.prompt_tokens, Some(k.prompt_tokens));
        assert_eq!(s.generation_tokens, Some(k.completion_tokens));
        assert_eq!(k.completion_tokens, 15 * 12);
        assert_eq!(s.cached_tokens, Some(k.cached_tokens));
        assert_eq!(c.window, "warmup+measured");
        assert!(c.client_in_flight_max.is_some_and(|n| (1..=3).contains(&n)));
        assert!(c.server_in_flight_max.is_none_or(|n| n <= 3), "{c:?}");
        let warm = run.axes["cache_state"] == "warm";
        assert_eq!(c.priming.is_some(), warm, "{c:?}");
        if let Some(p) = &c.priming {
            // The priming pass sends the measured requests once (not the warmup's).
            assert_eq!((p.client.requests, p.server.requests), (12, Some(12)));
            assert_eq!(p.server.prompt_tokens, Some(p.client.prompt_tokens));
            assert_eq!(p.server.cached_tokens, Some(p.client.cached_tokens));
        }
    }
    // The cached tokens of the stored rows (warmup and measured) are the server's growth.
    for (run, c) in &all {
        let sql = format!(
            "SELECT SUM(cached_tokens) FROM requests WHERE run_id = '{}' AND phase != 'priming'",
            run.id
        );
        let sum: Vec<Vec<Option<i64>>> = cli_support::query(&db, &sql);
        assert_eq!(sum[0][0].map(|n| n as u64), c.server.cached_tokens);
    }
    let warm = &all
        .iter()
        .find(|(r, _)| r.axes["cache_state"] == "warm")
        .unwrap()
        .1;
    assert!(
        warm.server.cached_tokens.unwrap() > 0,
        "a warm run hits: {warm:?}"
    );
}

/// A 64-token shared prefix (the template's opening inside it) on a server of
/// 128-token blocks caches nothing: planned as 0, not as a shortfall. The block size is
/// read from the server's `vllm:cache_config_info`; the endpoint's `cache_block_size`
/// overrides it (here wrongly, so the measured ratio falls short of that plan).
#[test]
fn the_planned_share_counts_whole_cache_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let rest = "[matrix]\nload = { concurrency = 1, requests = 8, warmup = 0 }\n";
    let sim = "block_size = 128";
    let db = cli_support::run(
        &plan(dir.path(), "", sim, 64, rest),
        &dir.path().join("read"),
    );
    let run = &cli_support::report_json(&db)[0];
    assert_eq!(run["metrics"]["planned_prefix_share"], 0.0);
    assert_eq!(run["metrics"]["cache_hit_ratio"], 0.0);
    let warned = |run: &serde_json::Value, kind: &str| {
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(kind))
    };
    assert!(!warned(run, "cache_shortfall"), "{}", run["warnings"]);
    let db = cli_support::run(
        &plan(dir.path(), "cache_block_size = 16", sim, 64, rest),
        &dir.path().join("told"),
    );
    let run = &cli_support::report_json(&db)[0];
    // 64 shared tokens in 16-token blocks: 64 of 256 for requests 1..7.
    let planned = run["metrics"]["planned_prefix_share"].as_f64().unwrap();
    assert_eq!(planned, 7.0 * 64.0 / (8.0 * 256.0));
    assert!(warned(run, "cache_shortfall"), "{}", run["warnings"]);
}
