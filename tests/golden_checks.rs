//! Correctness under load (`[checks]`), against the simulator over real HTTP on
//! 127.0.0.1: golden requests are mixed into each run's measured traffic, their answers
//! checked, and `answers_ok_ratio` equals the simulator's truth (which answers it gave
//! correctly); their timings stay out of TTFT and latency; a gate on the ratio decides
//! `perfplan run`'s exit; the temperature-0 consistency check names a run whose answers
//! changed, and stays quiet when none did; bad keys and golden files are located errors
//! before any request is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cli_support::{perfplan, query, report_json};
use perfplan::plan::sim_golden::{GoldenAnswers, GoldenWord};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::Value;

fn sim(golden: GoldenAnswers) -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(10)),
        itl_base: HumanDuration(Duration::from_millis(4)),
        golden_answers: golden,
        seed: 11,
        ..SimConfig::default()
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A plan of one or more endpoints (name, URL), one run each (the endpoint axis).
fn plan(endpoints: &[(&str, String)], checks: &str, gates: &str) -> String {
    let mut text = String::from("[plan]\nname = \"golden\"\nseed = 5\n\n");
    for (name, url) in endpoints {
        text += &format!("[endpoints.{name}]\nbase_url = \"{url}\"\n\n");
    }
    let names: Vec<String> = endpoints.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    text += &format!(
        "[models.m]\n\n[datasets.hi]\nkind = \"prompt\"\ntext = \"Tell me a story.\"\n\n\
         [defaults]\noutput_tokens = 32\nignore_eos = true\n\n[checks]\n{checks}\n\n\
         [matrix]\nendpoint = [{}]\nload = {{ concurrency = 4, requests = 40, warmup = 4 }}\n\n{gates}",
        names.join(", ")
    );
    text
}

fn run(plan: &Path, out: &Path) -> std::process::Output {
    perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

/// `report --format json`, whose exit says whether the stored gates passed.
fn report(db: &Path) -> Vec<Value> {
    let o = perfplan(&["report", db.to_str().unwrap(), "--format", "json"]);
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
        .as_array()
        .unwrap()
        .clone()
}

fn metric(run: &Value, name: &str) -> f64 {
    run["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: {}", run["metrics"]))
}

/// The run's verdict reasons, but `client_bound`: whether the client kept up is the
/// machine's load (the tests' machine shares two cores with builds), not the answers'.
fn reasons(run: &Value) -> Vec<String> {
    run["verdict"]["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|x| x["code"].as_str().unwrap().to_string())
                .filter(|code| code != "client_bound")
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ok_ratio_is_the_simulators_truth_and_golden_timings_stay_out() {
    let server = SimServer::start(sim(GoldenAnswers::Rate(0.6)))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "plan.toml",
        &plan(&[("s", server.base_url())], "per_run = 25", ""),
    );
    let o = run(&p, &dir.path().join("out"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let truth = server.truth();
    let golden: Vec<bool> = truth.iter().filter_map(|t| t.golden_correct).collect();
    assert_eq!(golden.len(), 25, "the server saw every golden request");
    assert_eq!(
        truth.len(),
        4 + 40 + 25,
        "warmup, measured and golden requests"
    );
    let right = golden.iter().filter(|c| **c).count();
    assert!(right > 0 && right < 25, "a rate gives both: {right}");
    let db = dir.path().join("out/results.db");
    let runs = report_json(&db);
    let r = &runs[0];
    assert_eq!(metric(r, "answers_checked"), 25.0);
    assert_eq!(metric(r, "answers_ok_ratio"), right as f64 / 25.0);
    assert_eq!(metric(r, "answers_unparsed_ratio"), 0.0);
    // Golden answers are a few tokens; every measured one is 32 tokens 4 ms apart: a
    // golden request in the latency or token figures would show in their minimum.
    assert_eq!(metric(r, "requests_ok"), 40.0);
    assert_eq!(metric(r, "output_tokens_min"), 32.0);
    assert!(
        metric(r, "latency_min") > 100.0,
        "{}",
        metric(r, "latency_min")
    );
    let rows: Vec<Vec<Option<String>>> = query(
        &db,
        "SELECT phase, answer_check FROM requests WHERE phase = 'check' ORDER BY request_index",
    );
    assert_eq!(rows.len(), 25);
    let ok_rows = rows
        .iter()
        .filter(|r| r[1].as_deref() == Some("ok"))
        .count();
    assert_eq!(ok_rows, right, "stored checks agree with the truth");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_on_the_ok_ratio_decides_the_exit_and_changed_answers_are_named() {
    let good = SimServer::start(sim(GoldenAnswers::Word(GoldenWord::Correct)))
        .await
        .unwrap();
    let same = SimServer::start(sim(GoldenAnswers::Word(GoldenWord::Correct)))
        .await
        .unwrap();
    let bad = SimServer::start(sim(GoldenAnswers::Word(GoldenWord::Wrong)))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gate = "[gates]\nanswers_ok_ratio = \">= 0.99\"\n";
    // Two servers answering alike: the gate passes, no answer changed.
    let alike = [("a", good.base_url()), ("b", same.base_url())];
    let p = write(
        dir.path(),
        "alike.toml",
        &plan(&alike, "share = 0.25", gate),
    );
    let o = run(&p, &dir.path().join("alike"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = report_json(&dir.path().join("alike/results.db"));
    for r in &runs {
        assert_eq!(metric(r, "answers_checked"), 10.0);
        assert_eq!(metric(r, "answers_ok_ratio"), 1.0);
        assert!(!reasons(r).contains(&"answers_changed".to_string()), "{r}");
    }
    // The second tier's server answers wrongly: its gate fails (exit 1) and its run
    // names the first as the one its answers changed from.
    let differ = [("a", good.base_url()), ("b", bad.base_url())];
    let p = write(
        dir.path(),
        "differ.toml",
        &plan(&differ, "share = 0.25", gate),
    );
    let o = run(&p, &dir.path().join("differ"));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("FAIL"), "{stdout}");
    let runs = report(&dir.path().join("differ/results.db"));
    assert_eq!(metric(&runs[0], "answers_ok_ratio"), 1.0);
    assert_eq!(metric(&runs[1], "answers_ok_ratio"), 0.0);
    assert!(reasons(&runs[0]).is_empty(), "{}", runs[0]);
    assert_eq!(reasons(&runs[1]), vec!["answers_changed".to_string()]);
    let text = runs[1]["verdict"]["reasons"][0]["text"].as_str().unwrap();
    let first = runs[0]["id"].as_str().unwrap();
    assert!(text.contains(&format!("from run #1 ({first})")), "{text}");
    assert!(text.starts_with("10 of 10 golden answers"), "{text}");
    for s in [good, same, bad] {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_keys_and_golden_files_are_located_before_any_request() {
    let server = SimServer::start(sim(GoldenAnswers::Word(GoldenWord::Correct)))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ep = [("s", server.base_url())];
    let p = write(dir.path(), "keys.toml", &plan(&ep, "shares = 0.1", ""));
    let o = perfplan(&["validate", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("keys.toml:") && err.contains("did you mean `share`?"),
        "{err}"
    );
    let p = write(
        dir.path(),
        "both.toml",
        &plan(&ep, "share = 0.1\nper_run = 3", ""),
    );
    let err =
        String::from_utf8_lossy(&perfplan(&["validate", p.to_str().unwrap()]).stderr).into_owned();
    assert!(
        err.contains("both `share` and `per_run`") && err.contains("both.toml:"),
        "{err}"
    );
    let golden = "{\"prompt\": \"What is 2 + 2?\", \"expected\": {\"regex\": \"\\\\b4\\\\b\"}}\n\
                  {\"prompt\": \"x\", \"expected\": {\"regx\": \"y\"}}\n{oops\n";
    write(dir.path(), "golden.jsonl", golden);
    let checks = "per_run = 2\npath = \"golden.jsonl\"";
    let p = write(dir.path(), "file.toml", &plan(&ep, checks, ""));
    let o = run(&p, &dir.path().join("out"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("golden.jsonl:2: unknown check `expected.regx` (did you mean `regex`?)"),
        "{err}"
    );
    assert!(err.contains("golden.jsonl:3: not JSON"), "{err}");
    assert!(server.truth().is_empty(), "nothing was sent");
    // The good line alone runs, and the simulator solves it.
    write(
        dir.path(),
        "golden.jsonl",
        &golden[..golden.find('\n').unwrap() + 1],
    );
    let o = run(&p, &dir.path().join("out2"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = report_json(&dir.path().join("out2/results.db"));
    assert_eq!(metric(&runs[0], "answers_ok_ratio"), 1.0);
    assert_eq!(metric(&runs[0], "answers_checked"), 2.0);
    server.shutdown().await;
}
