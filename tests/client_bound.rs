//! A CPU-starved client must say so: `perfplan run` pinned to one CPU next to a busy
//! loop, at an open-loop rate that CPU cannot send, carries the `client_bound` warning.
//! Alone in its test binary so the busy loop never disturbs timing tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Runs `perfplan run` on CPU 0 next to a busy loop on the same CPU, at an open-loop rate
/// one starved core cannot send: the run must carry the `client_bound` warning (stored
/// with the run and in its extras). Skipped where `taskset` is missing.
#[test]
fn starved_client_is_flagged_client_bound() {
    if Command::new("taskset").arg("-V").output().is_err() {
        eprintln!("taskset not found: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("starved.toml");
    std::fs::write(
        &plan,
        r#"
[plan]
name = "starved"
seed = 1

[endpoints.sim]
base_url = "sim://starved"

[endpoints.sim.sim]
ttft_base = "1ms"
itl_base = "1ms"
max_num_seqs = 8192

[models.m]
served_name = "m"

[datasets.hello]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 2
ignore_eos = true
stream = true

[matrix]
load = { rate = 4000, duration = "1500ms", requests = 6000 }
"#,
    )
    .unwrap();
    let mut busy = Command::new("taskset")
        .args(["-c", "0", "sh", "-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = dir.path().join("out");
    let status = Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_perfplan"), "run"])
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .output();
    let _ = busy.kill(); // by its own PID
    let _ = busy.wait();
    let status = status.unwrap();
    assert!(
        status.status.code() == Some(0) || status.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let (warnings, extras, verdict) = run_row(&out.join("results.db"));
    assert!(
        warnings.iter().any(|w| w["code"] == "client_bound"),
        "{warnings:?}"
    );
    assert!(extras["client_bound"].is_string(), "{extras}");
    // A client-bound run measures the client: its verdict says so, `invalid` when the
    // lateness passes 4× its limit or the client's CPU was saturated, else `suspect`
    // (how starved one shared core leaves the client depends on the machine's load).
    let metric = |name: &str| metric_of(&out.join("results.db"), name);
    // The thread driving the requests shared its core with the busy loop: it waited for
    // the CPU (Linux's run-queue wait) a good share of the run.
    let waited = metric("client_wait_ratio").expect("client_wait_ratio on Linux");
    assert!(waited > 0.1, "client_wait_ratio {waited}");
    let long = metric("duration_s").is_some_and(|d| d >= 1.0);
    let hard = metric("lateness_p99").is_some_and(|l| l > 4.0 * 5.0)
        || (long && metric("client_cpu_ratio").is_some_and(|c| c >= 0.9))
        || (long && waited >= 2.0 * 0.25);
    let expected = if hard { "invalid" } else { "suspect" };
    assert_eq!(verdict["status"], expected, "{verdict}");
    assert!(
        verdict["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["code"] == "client_bound"),
        "{verdict}"
    );
}

fn run_row(db: &Path) -> (Vec<Value>, Value, Value) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let (w, e, v): (String, String, String) = conn
        .query_row(
            "SELECT warnings_json, extras_json, verdict_json FROM runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    (
        serde_json::from_str(&w).unwrap(),
        serde_json::from_str(&e).unwrap(),
        serde_json::from_str(&v).unwrap(),
    )
}

/// A stored metric of the suite's one run.
fn metric_of(db: &Path, name: &str) -> Option<f64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT value FROM run_metrics WHERE name = ?1",
        [name],
        |r| r.get::<_, Option<f64>>(0),
    )
    .ok()
    .flatten()
}
