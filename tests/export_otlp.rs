//! `perfplan run … --export otlp=URL` and `perfplan report DB --export otlp=URL`: a
//! suite run against the simulator, pushed (the same, by both) to a
//! local OTLP/HTTP receiver (a few lines of axum on 127.0.0.1:0 decoding the JSON body):
//! one POST to `/v1/metrics` as `application/json`; the resource names the suite and
//! carries its labels; every finite stored metric is one data point of the gauge named
//! by the Prometheus rule, in base units, with the same labels as attributes; and
//! `--export prometheus=FILE` writes the same values as the exposition. A collector that
//! refuses the body fails the command with exit code 6.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::Value;

type Received = Arc<Mutex<Vec<(String, String, String)>>>;

/// A receiver on 127.0.0.1:0 that keeps every (path, content type, body) and answers
/// `status`; its base URL.
async fn receiver(status: StatusCode) -> (String, Received) {
    let got: Received = Arc::default();
    let keep = got.clone();
    let app = Router::new().route(
        "/{*path}",
        post(
            move |uri: axum::http::Uri, headers: HeaderMap, body: String| async move {
                let ct = headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                keep.lock()
                    .unwrap()
                    .push((uri.path().to_string(), ct, body));
                (status, "{}")
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

fn perfplan(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .output()
        .unwrap()
}

const PLAN: &str = r#"
[plan]
name = "otlp-export"
labels = { release = "2.0.1" }
[endpoints.sim]
base_url = "sim://otlp-export"
[endpoints.sim.sim]
ttft_base = "4ms"
itl_base = "1ms"
[models.m]
[datasets.d]
kind = "prompt"
text = "push me"
[defaults]
output_tokens = 8
[matrix]
load = [{ concurrency = 1, requests = 6 }, { concurrency = 2, requests = 6 }]
"#;

fn attr<'a>(attrs: &'a Value, key: &str) -> Option<&'a str> {
    attrs
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)?
        .pointer("/value/stringValue")?
        .as_str()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_reaches_the_collector_in_base_units() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = dir.path().join("out");
    let (url, got) = receiver(StatusCode::OK).await;
    let export = format!("otlp={url}");
    // `run --export` pushes each run as it is stored and all when the suite ends;
    // `report --export` pushes the same again.
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--export",
        &export,
    ]
    .map(String::from);
    let o = tokio::task::spawn_blocking(move || {
        perfplan(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let db = out.to_str().unwrap().to_string();
    let prom = dir.path().join("m.prom");
    let prom_arg = format!("prometheus={}", prom.display());
    let args = [
        "report", &db, "--format", "json", "--export", &export, "--export", &prom_arg,
    ]
    .map(String::from);
    let o = tokio::task::spawn_blocking(move || {
        perfplan(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();

    let got = got.lock().unwrap().clone();
    assert_eq!(
        got.len(),
        4,
        "one POST by run as each run is stored, one when its suite ends, one by report"
    );
    assert_eq!(got[2], got[3], "run and report push the same");
    let (path, ct, body) = &got[3];
    assert_eq!(
        (path.as_str(), ct.as_str()),
        ("/v1/metrics", "application/json")
    );
    let body: Value = serde_json::from_str(body).unwrap();
    let rm = &body["resourceMetrics"][0];
    let res = &rm["resource"]["attributes"];
    assert_eq!(attr(res, "service.name"), Some("perfplan"));
    assert_eq!(attr(res, "perfplan.suite"), Some("otlp-export"));
    assert_eq!(attr(res, "perfplan.label.release"), Some("2.0.1"));
    assert!(attr(res, "host.cpu.cores").is_some(), "{res}");
    assert!(
        attr(res, "perfplan.endpoint.sim.version").is_some(),
        "{res}"
    );
    let metrics = rm["scopeMetrics"][0]["metrics"].as_array().unwrap();
    let points: usize = metrics
        .iter()
        .map(|m| m["gauge"]["dataPoints"].as_array().unwrap().len())
        .sum();
    let finite: usize = runs
        .iter()
        .map(|r| {
            let m = r["metrics"].as_object().unwrap();
            m.values()
                .filter(|v| v.as_f64().is_some_and(f64::is_finite))
                .count()
        })
        .sum();
    assert_eq!(points, finite, "one data point per finite metric");
    let ttft = metrics
        .iter()
        .find(|m| m["name"] == "perfplan_ttft_p99_seconds")
        .expect("ttft_p99");
    assert_eq!(ttft["unit"], "s");
    let prom_text = std::fs::read_to_string(&prom).unwrap();
    for run in &runs {
        let id = run["id"].as_str().unwrap();
        let p = ttft["gauge"]["dataPoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| attr(&p["attributes"], "run") == Some(id))
            .expect("each run's point");
        let seconds = run["metrics"]["ttft_p99"].as_f64().unwrap() / 1000.0;
        assert!((p["asDouble"].as_f64().unwrap() - seconds).abs() < 1e-12);
        assert_eq!(attr(&p["attributes"], "suite"), Some("otlp-export"));
        assert!(attr(&p["attributes"], "load_concurrency").is_some(), "{p}");
        assert!(p["timeUnixNano"].as_str().unwrap().len() >= 19);
        // The same value in the exposition written beside it.
        assert!(prom_text
            .lines()
            .any(|l| l.starts_with("perfplan_ttft_p99_seconds{")
                && l.contains(&format!("run=\"{id}\""))
                && l.ends_with(&format!(" {}", p["asDouble"].as_f64().unwrap()))));
    }

    // A collector that refuses the body fails the command, naming it.
    let (bad, _) = receiver(StatusCode::BAD_REQUEST).await;
    let args = [
        "report".to_string(),
        db,
        "--export".into(),
        format!("otlp={bad}"),
    ];
    let o = tokio::task::spawn_blocking(move || {
        perfplan(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("answered 400"), "{stderr}");
}
