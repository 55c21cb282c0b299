//! `cache_state = "warm"` for the traffic kinds that are not a plain list of prompts: a trace
//! replay and a multi-turn run each send their request set once, unmeasured, before they
//! are measured, and the measured pass finds it in the simulator's prefix cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;
use std::time::Duration;

use cli_support::{query, report_json, run};
use perfplan::sim::{SimConfig, SimServer};
use serde_json::{json, Value};

/// `n` non-streamed records over `span`, each a distinct prompt of a few hundred words.
fn write_trace(path: &Path, n: usize, span: Duration) {
    let gap = span.as_secs_f64() / (n - 1) as f64;
    let mut text = String::new();
    for i in 0..n {
        let content = format!("record {i} {}", "lorem ipsum dolor sit amet ".repeat(60));
        let body = json!({"model": "m", "messages": [{"role": "user", "content": content}],
                          "max_tokens": 4});
        let line = json!({"timestamp": 1_700_000_000.0 + i as f64 * gap, "body": body});
        text.push_str(&format!("{line}\n"));
    }
    std::fs::write(path, text).unwrap();
}

/// (phase, item, cached tokens, sent µs) of a run's requests, in stored order.
fn rows_of(db: &Path, run_id: &str) -> Vec<(String, i64, Option<i64>, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT phase, item, cached_tokens, sent_us FROM requests WHERE run_id = ?1 \
             ORDER BY request_index",
        )
        .unwrap();
    stmt.query_map([run_id], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn a_warm_trace_is_replayed_once_unmeasured_then_measured() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let cfg = SimConfig {
        models: vec!["m".into()],
        ttft_base: perfplan::units::HumanDuration(Duration::from_millis(2)),
        itl_base: perfplan::units::HumanDuration(Duration::from_millis(1)),
        prefix_cache: true,
        ..SimConfig::default()
    };
    let sim = rt.block_on(SimServer::start(cfg)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = 12;
    write_trace(
        &dir.path().join("trace.jsonl"),
        n,
        Duration::from_millis(600),
    );
    let plan = format!(
        "[plan]\nname = \"warm-trace\"\n[endpoints.s]\nbase_url = \"{}\"\n[models.m]\n\
         [datasets.t]\nkind = \"trace\"\npath = \"trace.jsonl\"\nspeed = 2\n\
         [matrix]\ncache_state = [\"warm\"]\n",
        sim.base_url()
    );
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    let db = run(&dir.path().join("plan.toml"), &dir.path().join("out"));
    let runs = report_json(&db);
    let id = runs[0]["id"].as_str().unwrap();
    let rows = rows_of(&db, id);
    let (priming, measured): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r.0 == "priming");
    assert_eq!((priming.len(), measured.len()), (n, n), "{rows:?}");
    assert_eq!(sim.truth().len(), 2 * n, "the server saw each record twice");
    // The priming pass keeps the recorded pace (300 ms at speed 2) and comes first.
    let span = |rs: &[&(String, i64, Option<i64>, i64)]| rs[rs.len() - 1].3 - rs[0].3;
    assert!(
        span(&priming) >= 250_000,
        "priming took {} µs",
        span(&priming)
    );
    assert_eq!(
        priming[0].2,
        Some(0),
        "the first record is new to the server"
    );
    for r in &measured {
        assert!(r.2.unwrap() >= 256, "measured record found cached: {r:?}");
    }
    let warnings = runs[0]["warnings"].to_string();
    assert!(!warnings.contains("only names the run"), "{warnings}");
    rt.block_on(sim.shutdown());
}

#[test]
fn a_warm_multi_turn_run_plays_its_conversations_once_first() {
    let dir = tempfile::tempdir().unwrap();
    let plan = r#"
[plan]
name = "warm-multi-turn"
[endpoints.s]
base_url = "sim://warm-mt"
[endpoints.s.sim]
ttft_base = "2ms"
itl_base = "1ms"
prefix_cache = true
[models.m]
served_name = "m"
[datasets.chat]
kind = "random_multi_turn"
turns = 2
user_tokens = 200
assistant_tokens = 8
[defaults]
ignore_eos = true
[matrix]
cache_state = ["cold", "warm"]
load = { concurrency = 2, requests = 8 }
"#;
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    let db = run(&dir.path().join("plan.toml"), &dir.path().join("out"));
    let runs = report_json(&db);
    assert_eq!(runs.len(), 2);
    for r in &runs {
        let warm = r["axes"]["cache_state"] == json!("warm");
        let rows = rows_of(&db, r["id"].as_str().unwrap());
        let primed = rows.iter().filter(|r| r.0 == "priming").count();
        let measured: Vec<_> = rows.iter().filter(|r| r.0 == "measured").collect();
        assert_eq!(primed, if warm { 8 } else { 0 });
        assert_eq!(measured.len(), 8);
        // First turns (even items: 2-turn conversations, one turn in flight each) are new
        // to a cold server and found whole in a primed one.
        let extras: Vec<Vec<Option<String>>> = query(
            &db,
            &format!(
                "SELECT extras_json FROM runs WHERE id = '{}'",
                r["id"].as_str().unwrap()
            ),
        );
        let extras: Value = serde_json::from_str(extras[0][0].as_deref().unwrap()).unwrap();
        let turn_of = |item: i64| extras["turn_of_item"][item as usize].as_u64().unwrap();
        let firsts: Vec<i64> = measured
            .iter()
            .filter(|r| turn_of(r.1) == 0)
            .map(|r| r.2.unwrap())
            .collect();
        assert!(!firsts.is_empty());
        for cached in firsts {
            if warm {
                assert!(
                    cached >= 150,
                    "a primed first turn found {cached} cached tokens"
                );
            } else {
                assert_eq!(cached, 0, "a cold first turn found cached tokens");
            }
        }
    }
}
