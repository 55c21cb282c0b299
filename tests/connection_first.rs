//! Before the first request, the connection test says what it waits for at once and
//! gives up with the cause in one line; it names the models the server lists and stops
//! on one the plan does not find ("did you mean", case aside, and the list); a
//! plan-free run without `--model` takes the only model listed. A suite stopped here
//! sent no request and leaves no output folder.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use perfplan::sim::{SimConfig, SimServer};

fn plan(base_url: &str, model: &str) -> String {
    format!(
        r#"
[plan]
name = "first"
[endpoints.server]
base_url = "{base_url}"
ready_timeout = "1s"
[models.m]
served_name = "{model}"
[datasets.d]
kind = "prompt"
text = "hello"
[defaults]
output_tokens = 2
[matrix]
load = {{ concurrency = 1, requests = 2, warmup = 1 }}
"#
    )
}

fn perfplan(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_wrong_url_is_said_at_once_and_given_up_on_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", closed_port());
    std::fs::write(dir.path().join("p.toml"), plan(&url, "m")).unwrap();
    let out = perfplan(dir.path(), &["run", "p.toml", "--out", "results"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let waiting = format!(
        "waiting for {url}/v1/models (endpoint `server`): connection refused; retrying up to 1 s"
    );
    let at = stderr.find(&waiting).unwrap_or_else(|| panic!("{stderr}"));
    let error = stderr[at..]
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains("is not usable: connection refused, for 1."),
        "{error}"
    );
    for raw in ["tcp connect error", "client error (Connect)", "os error"] {
        assert!(
            !error.contains(raw),
            "the cause in words, not the chain: {error}"
        );
    }
    assert!(
        !dir.path().join("results").exists(),
        "no folder for a suite that sent nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_the_server_does_not_list_stops_the_suite_with_did_you_mean() {
    let sim = SimServer::start(SimConfig {
        models: vec!["Qwen3-8B".into(), "Llama-3.1-8B".into()],
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), plan(&sim.base_url(), "qwen3-8b")).unwrap();
    let out = perfplan(dir.path(), &["run", "p.toml", "--out", "results"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("does not serve model `qwen3-8b` (did you mean `Qwen3-8B`?)"),
        "{stderr}"
    );
    assert!(stderr.contains("lists: Qwen3-8B, Llama-3.1-8B"), "{stderr}");
    let sent: Vec<_> = sim
        .received()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect();
    assert!(
        sent.is_empty(),
        "no request before the model is found: {sent:?}"
    );
    assert!(!dir.path().join("results").exists());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_free_run_takes_the_only_served_model() {
    let one = SimServer::start(SimConfig {
        models: vec!["only-model".into()],
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = one.base_url();
    let args = [
        "run",
        "--url",
        &url,
        "--requests",
        "2",
        "--output-tokens",
        "2",
        "--out",
        "r1",
    ];
    let out = perfplan(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--model only-model (the only model"),
        "{stderr}"
    );
    let posted = one
        .received()
        .into_iter()
        .filter(|r| r.method == "POST")
        .count();
    assert!(posted >= 2, "{posted}");
    one.shutdown().await;
    let two = SimServer::start(SimConfig {
        models: vec!["a".into(), "b".into()],
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let url = two.base_url();
    let out = perfplan(dir.path(), &["run", "--url", &url, "--out", "r2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("lists 2 models; choose one with --model: a, b"),
        "{stderr}"
    );
    assert!(!dir.path().join("r2").exists());
    two.shutdown().await;
}
