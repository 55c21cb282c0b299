//! `perfplan run … --export`: each exporter is a sink of the suite, told of every run as it
//! is stored. Against the simulator, a collector of a few lines of axum on 127.0.0.1:0
//! gets one POST per run while the suite runs (each between that run's end and the next
//! run's start, by the `--progress-json` clock, carrying only that run's points), then the
//! whole suite when it ends; `prometheus=FILE` holds the runs stored so far. A collector
//! that refuses (500) or is not there (connection refused) is one warning each with the
//! run, the suite runs to its end, and the end-of-suite export fails with exit code 6.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use serde_json::Value;

/// Each POST's arrival (unix seconds) and body.
type Received = Arc<Mutex<Vec<(f64, Value)>>>;

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A collector on 127.0.0.1:0 that keeps every POST and answers `status`; its base URL.
async fn collector(status: StatusCode) -> (String, Received) {
    let got: Received = Arc::default();
    let keep = got.clone();
    let app = Router::new().route(
        "/v1/metrics",
        post(move |body: String| async move {
            let body = serde_json::from_str(&body).unwrap_or(Value::Null);
            keep.lock().unwrap().push((now(), body));
            (status, "{}")
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

const PLAN: &str = r#"
[plan]
name = "live-export"
[endpoints.sim]
base_url = "sim://live-export"
[endpoints.sim.sim]
ttft_base = "20ms"
itl_base = "2ms"
[models.m]
[datasets.d]
kind = "prompt"
text = "push me as I land"
[defaults]
output_tokens = 8
[matrix]
load = [
  { concurrency = 1, requests = 4 },
  { concurrency = 2, requests = 4 },
  { concurrency = 4, requests = 4 },
]
"#;

/// `perfplan run PLAN --out DIR --progress-json FILE` with `extra`, in a blocking task.
async fn run(dir: &std::path::Path, extra: &[String]) -> std::process::Output {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--progress-json")
        .arg(dir.join("progress.jsonl"))
        .args(extra);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// The `--progress-json` events of `kind`: (run, time).
fn events(dir: &std::path::Path, kind: &str) -> Vec<(String, f64)> {
    std::fs::read_to_string(dir.join("progress.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == kind)
        .map(|e| {
            let run = e["run"].as_str().unwrap_or_default().to_string();
            (run, e["time"].as_f64().unwrap())
        })
        .collect()
}

/// The distinct `run` attributes of a pushed body's data points.
fn runs_in(body: &Value) -> Vec<String> {
    let mut runs: Vec<String> = body
        .pointer("/resourceMetrics/0/scopeMetrics/0/metrics")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .flat_map(|m| m["gauge"]["dataPoints"].as_array().unwrap().iter())
        .flat_map(|p| p["attributes"].as_array().unwrap().iter())
        .filter(|a| a["key"] == "run")
        .map(|a| a["value"]["stringValue"].as_str().unwrap().to_string())
        .collect();
    runs.sort();
    runs.dedup();
    runs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_is_pushed_as_it_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (url, got) = collector(StatusCode::OK).await;
    let prom = dir.path().join("m.prom");
    let extra = [
        "--export".into(),
        format!("otlp={url}"),
        "--export".into(),
        format!("prometheus={}", prom.display()),
    ];
    let o = run(dir.path(), &extra).await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("warning: --export"), "{stderr}");

    let starts = events(dir.path(), "run_start");
    let ends = events(dir.path(), "run_end");
    let (_, suite_end) = events(dir.path(), "suite_end")[0];
    assert_eq!(starts.len(), 3);
    let got = got.lock().unwrap().clone();
    assert_eq!(got.len(), 4, "one push per run, then the suite's");
    for (i, (run, ended)) in ends.iter().enumerate() {
        let (at, body) = &got[i];
        assert_eq!(
            runs_in(body),
            [run.as_str()],
            "push {i} carries its run only"
        );
        assert!(at >= ended, "push {i} after its run ended");
        match starts.get(i + 1) {
            Some((_, next)) => assert!(at <= next, "push {i} before the next run started"),
            None => assert!(
                *at <= suite_end,
                "the last run's push before the suite ended"
            ),
        }
    }
    let mut all: Vec<String> = ends.into_iter().map(|(run, _)| run).collect();
    all.sort();
    assert_eq!(runs_in(&got[3].1), all, "the suite's push holds every run");
    let text = std::fs::read_to_string(&prom).unwrap();
    for run in &all {
        assert!(text.contains(&format!("run=\"{run}\"")), "{run}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_collector_is_a_warning_and_the_suite_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (refusing, got) = collector(StatusCode::INTERNAL_SERVER_ERROR).await;
    // A port nobody listens on: connection refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let extra = [
        "--export".into(),
        format!("otlp={refusing}"),
        "--export".into(),
        format!("otlp={gone}"),
    ];
    let o = run(dir.path(), &extra).await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(6),
        "the end-of-suite export fails: {stderr}"
    );
    assert!(
        stderr.contains("3 runs done, 0 skipped, 0 failed"),
        "{stderr}"
    );
    let first = events(dir.path(), "run_end")[0].0.clone();
    for target in [&refusing, &gone] {
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with(&format!("warning: --export otlp={target}: ")))
            .collect();
        assert_eq!(
            said.len(),
            2,
            "{target}: the first failure, then the count: {stderr}"
        );
        assert!(said[0].contains(&format!(": run {first}: ")), "{}", said[0]);
        assert!(
            said[1].contains("failed on 3 of the suite's runs"),
            "{}",
            said[1]
        );
    }
    assert!(stderr.contains("answered 500"), "{stderr}");
    assert_eq!(
        got.lock().unwrap().len(),
        4,
        "three runs and the suite, each tried once"
    );
}
