//! `perfplan run` through the binary against a simulator in the test process: what the
//! server received, what was stored and what the report says must agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use perfplan::record::Phase;
use perfplan::sim::{SimConfig, SimServer};
use perfplan::store::Store;
use perfplan::units::HumanDuration;
use serde_json::Value;

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .output()
        .expect("run perfplan")
}

fn sim_config() -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(5)),
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

fn plan(base_url: &str, extra_matrix: &str) -> String {
    format!(
        r#"
[plan]
name = "run-test"
seed = 3

[endpoints.sim]
base_url = "{base_url}"
reject_fields = ["seed"]

[models.m]
served_name = "smollm2"
tokenizer = "{tok}"

[datasets.rand]
kind = "random"
input_tokens = 64
prefix_tokens = 16

[defaults]
output_tokens = 8
ignore_eos = true
temperature = 0.0
seed = 1234

[matrix]
load = {{ concurrency = 4, requests = 20, warmup = 4 }}
{extra_matrix}
"#,
        tok = fixture_tokenizer()
    )
}

fn report_json(dir: &Path) -> Vec<Value> {
    let out = perfplan(&["report", dir.to_str().unwrap(), "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_agree_and_bodies_follow_the_plan() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    std::fs::write(&plan_path, plan(&sim.base_url(), "")).unwrap();
    let out_dir = dir.path().join("out");
    let events = dir.path().join("progress.jsonl");
    let out = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--progress-json",
        events.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let events: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["event"], "run_start");
    assert_eq!(events.last().unwrap()["event"], "suite_end");
    let end = events.iter().find(|e| e["event"] == "run_end").unwrap();
    assert_eq!(end["metrics"]["requests_ok"], 20.0);

    let received: Vec<_> = sim
        .received()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(received.len(), 24, "20 measured + 4 warmup");
    for r in &received {
        assert!(
            r.body.get("seed").is_none(),
            "rejected field sent: {}",
            r.body
        );
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["stream_options"]["include_usage"], true);
        assert_eq!(r.body["max_tokens"], 8);
        assert_eq!(r.body["ignore_eos"], true);
        assert_eq!(r.body["model"], "smollm2");
    }

    let store = Store::open(&out_dir).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    let rows = store.request_rows(&runs[0].id).unwrap();
    assert_eq!(rows.len(), 24);
    assert_eq!(
        rows.iter().filter(|r| r.phase == Phase::Measured).count(),
        20
    );
    assert!(rows.iter().all(|r| r.target_input_tokens == Some(64)));
    assert!(rows.iter().all(|r| r.usage.completion_tokens == Some(8)));

    let report = report_json(&out_dir);
    assert_eq!(report[0]["metrics"]["requests_ok"], 20.0);
    assert_eq!(report[0]["metrics"]["requests_failed"], 0.0);
    // The simulator's first token is due 5 ms after the request's bytes arrived, and goes
    // out within about 1 ms either side of that (its timers lead by 1 ms).
    let ttft_p50 = report[0]["metrics"]["ttft_p50"].as_f64().unwrap();
    assert!((4.0..50.0).contains(&ttft_p50), "ttft_p50 {ttft_p50} ms");
    assert!(out_dir.join("report.html").is_file() && out_dir.join("report.md").is_file());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ttft"), "summary table printed: {stdout}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_ids_and_warm_priming() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    std::fs::write(
        &plan_path,
        plan(
            &sim.base_url(),
            "tokenize_prompt = true\ncache_state = \"warm\"",
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let received: Vec<_> = sim
        .received()
        .into_iter()
        .filter(|r| r.path == "/v1/completions")
        .collect();
    assert_eq!(
        received.len(),
        20 + 4 + 20,
        "priming pass + warmup + measured"
    );
    for r in &received {
        let prompt = r.body["prompt"].as_array().expect("token ids");
        assert_eq!(prompt.len(), 64);
        assert!(prompt.iter().all(Value::is_u64));
    }
    // The priming pass sends exactly the measured set, once.
    let bodies: Vec<String> = received
        .iter()
        .map(|r| r.body["prompt"].to_string())
        .collect();
    let (mut priming, mut measured) = (bodies[..20].to_vec(), bodies[24..].to_vec());
    priming.sort();
    measured.sort();
    assert!(
        priming == measured,
        "the priming pass sends the measured set"
    );
    let store = Store::open(&out_dir).unwrap();
    let run = &store.runs().unwrap()[0];
    let rows = store.request_rows(&run.id).unwrap();
    assert_eq!(
        rows.iter().filter(|r| r.phase == Phase::Priming).count(),
        20
    );
    let report = report_json(&out_dir);
    assert_eq!(report[0]["metrics"]["requests_ok"], 20.0);
    let hit = report[0]["metrics"]["cache_hit_ratio"].as_f64().unwrap();
    // 48 of 64 tokens: the last block of a fully cached prompt is always recomputed.
    assert!(hit >= 0.74, "warm run reuses the primed prefixes: {hit}");
    sim.shutdown().await;
}

#[test]
fn unreachable_endpoint_exits_3_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let text = plan(&format!("http://127.0.0.1:{port}"), "")
        .replace("reject_fields", "ready_timeout = \"1s\"\nreject_fields");
    std::fs::write(&plan_path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args([
            "run",
            plan_path.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not usable") && err.contains("is the server running?"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_repeats_the_stored_plan_into_a_new_folder() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    std::fs::write(&plan_path, plan(&sim.base_url(), "")).unwrap();
    let first = dir.path().join("first");
    let out = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
        "--set",
        "defaults.output_tokens=4",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The plan file changes afterwards: rerun must use the stored text, not the file.
    std::fs::write(&plan_path, "garbage = [").unwrap();
    let second = dir.path().join("second");
    let out = perfplan(&[
        "rerun",
        first.to_str().unwrap(),
        "--out",
        second.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = Store::open(&first).unwrap().runs().unwrap();
    let b = Store::open(&second).unwrap().runs().unwrap();
    assert_eq!(
        a.iter().map(|r| &r.id).collect::<Vec<_>>(),
        b.iter().map(|r| &r.id).collect::<Vec<_>>()
    );
    let bodies: Vec<_> = sim
        .received()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(bodies.len(), 48);
    assert!(
        bodies.iter().all(|r| r.body["max_tokens"] == 4),
        "the --set override is replayed"
    );
    sim.shutdown().await;
}

/// The server sees exactly the planned prompt length: chat prompts through the chat
/// template, and token ids, both counted by a simulator using the same tokenizer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_counts_equal_the_planned_input_length() {
    let config = SimConfig {
        tokenizer: Some(fixture_tokenizer()),
        ..sim_config()
    };
    let sim = SimServer::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    let text = plan(&sim.base_url(), "tokenize_prompt = [false, true]").replace(
        "input_tokens = 64\nprefix_tokens = 16",
        "input_tokens = 1024\nprefix_tokens = 512",
    );
    std::fs::write(&plan_path, text).unwrap();
    let out_dir = dir.path().join("out");
    let out = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&out_dir).unwrap();
    for run in store.runs().unwrap() {
        let rows = store.request_rows(&run.id).unwrap();
        let exact = rows
            .iter()
            .filter(|r| r.usage.prompt_tokens == Some(1024))
            .count();
        let token_ids = run.axes["tokenize_prompt"] == true;
        if token_ids {
            assert_eq!(exact, rows.len(), "token ids are exact");
        } else {
            assert!(
                exact * 100 >= rows.len() * 99,
                "{exact} of {} exact",
                rows.len()
            );
            assert!(rows
                .iter()
                .all(|r| r.usage.prompt_tokens.unwrap().abs_diff(1024) <= 2));
        }
        assert!(
            rows.iter()
                .all(|r| r.client_input_tokens == r.usage.prompt_tokens),
            "client count = server count"
        );
    }
    sim.shutdown().await;
}

/// A run whose every measured request failed is stored as failed, with the reason, and the
/// suite exits 4; its request rows (the failures) are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_where_every_request_fails_is_a_failed_run() {
    let config = SimConfig {
        fault_http_500: 1.0,
        ..sim_config()
    };
    let sim = SimServer::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    std::fs::write(&plan_path, plan(&sim.base_url(), "")).unwrap();
    let out_dir = dir.path().join("out");
    let out = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("every measured request failed (20 http)"),
        "{stderr}"
    );
    let store = Store::open(&out_dir).unwrap();
    let run = &store.runs().unwrap()[0];
    assert_eq!(run.status, perfplan::store::RunStatus::Failed);
    assert!(run
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("every measured request failed"));
    assert_eq!(
        store.request_rows(&run.id).unwrap().len(),
        24,
        "the failures are kept"
    );
    sim.shutdown().await;
}

/// `--debug` logs every request body and every response as received: each streamed
/// event's data, `[DONE]` included, joined to its request by index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_logs_bodies_and_every_response_event() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    std::fs::write(&plan_path, plan(&sim.base_url(), "")).unwrap();
    let out_dir = dir.path().join("out");
    let out = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--debug",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(out_dir.join("perfplan.log")).unwrap();
    let count = |needle: &str| log.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(count("POST /v1/chat/completions"), 24, "every body");
    assert_eq!(count("debug response "), 24, "every response");
    assert_eq!(count("data: [DONE]"), 24, "every stream's end");
    // 8 content events (a role chunk, usage) per stream, by request index.
    let first: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" index=0 data: "))
        .collect();
    assert!(first.len() >= 9, "{first:?}");
    assert!(first.iter().any(|l| l.contains("chat.completion.chunk")));
    sim.shutdown().await;
}
