//! What request bodies carry, seen on the wire by a simulator in the test process: the
//! output limit under each API's own name, extra body fields as matrix axes, `n > 1`,
//! token ranges of the rerank and image kinds, and `body_template` files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

mod cli_support;

use cli_support::{perfplan, query, report_json, run};
use perfplan::sim::{ReceivedRequest, SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::{json, Value};

fn sim_config() -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(2)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    }
}

fn fixture_tokenizer() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/smollm2")
        .display()
        .to_string()
}

/// Runs `body` (the plan after its endpoint) against a fresh simulator; returns what the
/// simulator received on `path` and the database.
async fn run_against_sim(
    dir: &Path,
    body: &str,
    path: &str,
) -> (Vec<ReceivedRequest>, std::path::PathBuf) {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let plan = format!(
        "[plan]\nname = \"fields\"\nseed = 5\n\n[endpoints.sim]\nbase_url = \"{}\"\n\n[models.m]\nserved_name = \"m\"\ntokenizer = \"{}\"\n\n{body}",
        sim.base_url(),
        fixture_tokenizer()
    );
    let plan_path = dir.join("plan.toml");
    std::fs::write(&plan_path, plan).unwrap();
    let out = dir.join("out");
    let db = tokio::task::spawn_blocking(move || run(&plan_path, &out))
        .await
        .unwrap();
    let received = sim
        .received()
        .into_iter()
        .filter(|r| r.path == path)
        .collect();
    sim.shutdown().await;
    (received, db)
}

/// Completion tokens of every stored request, as the server's usage reported them.
fn completion_tokens(db: &Path) -> Vec<i64> {
    query::<i64>(db, "SELECT completion_tokens FROM requests")
        .into_iter()
        .map(|row| row[0].unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_runs_limit_output_with_max_output_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
[datasets.rand]
kind = "random"
input_tokens = 32

[defaults]
output_tokens = 8
ignore_eos = true
max_completion_tokens = true

[matrix]
api = "responses"
load = { concurrency = 2, requests = 12, warmup = 2 }
"#;
    let (received, db) = run_against_sim(dir.path(), body, "/v1/responses").await;
    assert_eq!(received.len(), 14, "2 warmup + 12 measured requests");
    for r in &received {
        assert_eq!(r.body["max_output_tokens"], json!(8), "{}", r.body);
        assert!(r.body.get("max_tokens").is_none(), "{}", r.body);
        assert!(r.body.get("max_completion_tokens").is_none(), "{}", r.body);
    }
    let tokens = completion_tokens(&db);
    assert_eq!(tokens.len(), 14);
    assert!(tokens.iter().all(|&n| n == 8), "{tokens:?}");
}
