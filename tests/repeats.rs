//! Repeats (`load = { ..., repeat = N }`) against the simulator with timing jitter on:
//! the report's Student t interval over 5 repeats contains the simulator's true mean TTFT
//! (from its truth); a suite of repeats compared with its own rerun says "no change" on
//! every metric, and against a 50% slower server "worse" by the repeats' Welch interval
//! (20% sat at the edge of 5 repeats of 10 jittered requests when the machine was busy:
//! latency_p50's interval held zero once in a full test run).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer, TruthRecord};
use perfplan::units::HumanDuration;
use serde_json::Value;

use cli_support::stdout_of as perfplan;

const OUTPUT_TOKENS: u64 = 3;
const REQUESTS: u64 = 10;
const REPEATS: u64 = 5;

fn plan(base_url: &str) -> String {
    format!(
        r#"
[plan]
name = "rep"
seed = 7
[endpoints.sim]
base_url = "{base_url}"
[models.m]
[datasets.d]
kind = "prompt"
text = "repeat me"
[defaults]
output_tokens = {OUTPUT_TOKENS}
ignore_eos = true
[matrix]
load = {{ concurrency = 1, requests = {REQUESTS}, warmup = 1, repeat = {REPEATS} }}
[report]
metrics = ["ttft_mean", "ttft_p50", "latency_p50", "tpot_mean", "output_tps"]
"#
    )
}

/// Runs the plan against a fresh simulator (TTFT 20 ms × `slow`, jitter ±30%); returns
/// the output folder and the simulator's truth of the measured requests.
async fn suite(dir: &Path, name: &str, slow: f64) -> (String, Vec<TruthRecord>) {
    let ms = |x: f64| HumanDuration(Duration::from_secs_f64(x / 1000.0));
    let config = SimConfig {
        ttft_base: ms(20.0 * slow),
        itl_base: ms(1.0 * slow),
        jitter: 0.3,
        seed: 11,
        ..SimConfig::default()
    };
    let sim = SimServer::start(config).await.unwrap();
    let plan_path = dir.join(format!("{name}.toml"));
    std::fs::write(&plan_path, plan(&sim.base_url())).unwrap();
    let out = dir.join(name);
    perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let truth = sim.truth();
    sim.shutdown().await;
    (out.display().to_string(), truth)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_interval_contains_the_true_mean_and_compare_judges_groups() {
    let dir = tempfile::tempdir().unwrap();
    let (base, truth) = suite(dir.path(), "base", 1.0).await;

    // Five stored runs of one group, each `repeat=k`.
    let runs: Value =
        serde_json::from_str(&perfplan(&["report", &base, "--format", "json"])).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len() as u64, REPEATS);
    let group = runs[0]["repeat"]["group"].as_str().unwrap().to_string();
    for (k, run) in runs.iter().enumerate() {
        assert_eq!(run["axes"]["repeat"], (k + 1) as u64);
        assert_eq!(run["repeat"]["group"], group.as_str());
        assert_eq!(run["repeat"]["of"], REPEATS);
    }

    // The simulator's truth: what it did for every measured and warmup request (the
    // preflight's request asks for another output length). Its jitter factors differ.
    let served: Vec<&TruthRecord> = truth
        .iter()
        .filter(|r| r.tokens_sent == OUTPUT_TOKENS)
        .collect();
    assert_eq!(served.len() as u64, REPEATS * (REQUESTS + 1));
    assert!(served.iter().any(|r| r.jitter < 0.9) && served.iter().any(|r| r.jitter > 1.1));
    let true_ttft_ms: Vec<f64> = served
        .iter()
        .map(|r| (r.first_token_us.unwrap() - r.arrival_us) as f64 / 1000.0)
        .collect();
    let true_mean = true_ttft_ms.iter().sum::<f64>() / true_ttft_ms.len() as f64;

    // The group's interval of mean TTFT over the 5 repeats.
    let groups: Value = serde_json::from_str(&perfplan(&[
        "report", &base, "--groups", "--format", "json",
    ]))
    .unwrap();
    let g = &groups[0];
    assert_eq!(g["group"], group.as_str());
    assert_eq!(
        (g["of"].as_u64(), g["done"].as_u64()),
        (Some(REPEATS), Some(REPEATS))
    );
    let ttft = &g["metrics"]["ttft_mean"];
    let (low, high, mean) = (
        ttft["low"].as_f64().unwrap(),
        ttft["high"].as_f64().unwrap(),
        ttft["mean"].as_f64().unwrap(),
    );
    // Margin: the client sees the first token up to about 1 ms after the server wrote it
    // (loopback, timer lead); the interval is some milliseconds wide from the jitter.
    let margin = 1.0;
    eprintln!("ttft_mean over {REPEATS} repeats: {mean:.3} [{low:.3}, {high:.3}] ms; truth {true_mean:.3} ms");
    assert!(high - low > 0.2, "no spread between repeats: {ttft}");
    assert!(
        low - margin <= true_mean && true_mean <= high + margin,
        "true mean {true_mean} ms outside [{low}, {high}] ± {margin}: {ttft}"
    );
    assert!(
        low - margin <= 20.0 && 20.0 <= high + margin,
        "configured 20 ms outside [{low}, {high}] ± {margin}"
    );
    assert!((mean - true_mean).abs() < margin, "{mean} vs {true_mean}");

    // People's report: one row per group, `mean ± half-width`.
    let table = perfplan(&["report", &base, "--metrics", "ttft_mean"]);
    assert!(table.contains("Student t 95%"), "{table}");
    assert!(table.contains(" ± "), "{table}");
    let md = perfplan(&["report", &base, "--format", "md"]);
    assert!(md.contains("### Repeats") && md.contains(" ± "), "{md}");
    let html = perfplan(&["report", &base, "--format", "html", "--out", "-"]);
    assert!(html.contains("<h2>Repeats</h2>"), "no groups in the page");
    let csv = perfplan(&["report", &base, "--groups", "--format", "csv"]);
    assert!(
        csv.starts_with("group,of,done,") && csv.contains(&format!("{group},5,5,")),
        "{csv}"
    );

    // An unchanged rerun: no change anywhere, judged by the repeats.
    let (again, _) = suite(dir.path(), "again", 1.0).await;
    let text = perfplan(&["compare", &base, &again]);
    let judged: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" (ms)") || l.contains("(tok/s)"))
        .collect();
    assert_eq!(judged.len(), 5, "{text}");
    assert!(judged.iter().all(|l| l.contains("no change")), "{text}");
    assert!(text.contains("5 vs 5 repeats"), "{text}");
    assert!(text.contains("1 matched runs"), "{text}");
    // Paired per request, repeat k with repeat k (the same prompts).
    let json: Value = serde_json::from_str(&perfplan(&[
        "compare", &base, &again, "--paired", "--format", "json",
    ]))
    .unwrap();
    let paired = json["paired"].as_array().unwrap();
    assert_eq!(paired.len() as u64, REPEATS, "{json}");
    assert!(
        paired
            .iter()
            .all(|p| p["refused"].is_null() && p["unpaired"] == 0),
        "{json}"
    );

    // A server 50% slower: worse, by the repeats' Welch interval.
    let (slow, _) = suite(dir.path(), "slow", 1.5).await;
    let text = perfplan(&["compare", &base, &slow]);
    let line = |m: &str| {
        text.lines()
            .find(|l| l.contains(m))
            .unwrap_or_default()
            .to_string()
    };
    for m in ["ttft_mean", "ttft_p50", "latency_p50"] {
        assert!(line(m).contains("worse (beyond noise)"), "{m}: {text}");
    }
    let json: Value =
        serde_json::from_str(&perfplan(&["compare", &base, &slow, "--format", "json"])).unwrap();
    let d = &json["pairs"][0]["metrics"]["ttft_mean"];
    assert_eq!(d["repeats"]["base"], REPEATS);
    assert!(d["ci_low"].as_f64().unwrap() > 0.0, "{d}");
}

/// Cold repeats send fresh prompts; warm repeats prime and measure the same prompt set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_repeats_get_fresh_prompts_and_warm_repeats_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    let tokenizer = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/smollm2");
    let plan = format!(
        r#"
[plan]
name = "fresh"
[endpoints.sim]
base_url = "{}"
[models.m]
tokenizer = "{tokenizer}"
[datasets.d]
kind = "random"
input_tokens = 32
[defaults]
output_tokens = 1
[matrix]
cache_state = ["cold", "warm"]
load = {{ concurrency = 1, requests = 3, warmup = 1, repeat = 2 }}
"#,
        sim.base_url()
    );
    let path = dir.path().join("fresh.toml");
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    perfplan(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    // Each run's bodies in order: cold 1, cold 2 (warmup 1 + measured 3 each), then warm 1
    // and warm 2 (priming the 3 measured prompts, then warmup 1 + measured 3 each). The
    // preflight's request asks for another output length.
    let prompts: Vec<String> = sim
        .received()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .filter(|r| r.body["max_tokens"] == 1 || r.body["max_completion_tokens"] == 1)
        .map(|r| r.body["messages"].to_string())
        .collect();
    sim.shutdown().await;
    assert_eq!(prompts.len(), 22, "{prompts:#?}");
    let (cold1, cold2) = (&prompts[0..4], &prompts[4..8]);
    let (warm1, warm2) = (&prompts[8..15], &prompts[15..22]);
    assert!(
        cold1.iter().all(|p| !cold2.contains(p)),
        "cold repeats share prompts"
    );
    assert_eq!(warm1, warm2, "warm repeats differ");
    assert_eq!(warm1[..3], warm1[4..], "a warm run measures what it primed");
}

fn expand(dir: &Path, name: &str, load: &str) -> std::process::Output {
    let plan = format!(
        r#"
[plan]
name = "ids"
[endpoints.e]
base_url = "http://127.0.0.1:9"
[models.m]
[datasets.d]
kind = "prompt"
text = "x"
[matrix]
cache_state = ["cold", "warm"]
load = [{load}]
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, plan).unwrap();
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["expand", "--json", path.to_str().unwrap()])
        .output()
        .unwrap()
}

/// `repeat = 1` or no `repeat` changes no id; a group's id is the id without `repeat`,
/// and repeat k's id is derived from it; a search or a repeat of 0 is a located error.
#[test]
fn group_ids_are_the_ids_without_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let plain = expand(dir.path(), "plain", "{ concurrency = 1, requests = 2 }");
    let one = expand(
        dir.path(),
        "one",
        "{ concurrency = 1, requests = 2, repeat = 1 }",
    );
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert_eq!(plain.stdout, one.stdout, "repeat = 1 changed the expansion");
    let three = expand(
        dir.path(),
        "three",
        "{ concurrency = 1, requests = 2, repeat = 3 }",
    );
    let plain: Value = serde_json::from_slice(&plain.stdout).unwrap();
    let three: Value = serde_json::from_slice(&three.stdout).unwrap();
    let three = three.as_array().unwrap();
    assert_eq!(three.len(), 6);
    for (i, run) in three.iter().enumerate() {
        let (group, k) = (&plain[i / 3], i % 3 + 1);
        assert_eq!(run["settings"]["repeat"]["group"], group["id"], "{run}");
        assert_eq!(run["settings"]["repeat"]["k"], k as u64);
        assert_eq!(run["axes"]["repeat"], k as u64);
        assert_eq!(
            run["axes"]["load"], group["axes"]["load"],
            "load label keeps no repeat"
        );
        assert_ne!(run["id"], group["id"]);
    }
    // Golden: repeat k's id is SHA-256("GROUP/repeat=k")[..12].
    let group = three[0]["settings"]["repeat"]["group"].as_str().unwrap();
    let digest = Command::new("sh")
        .args(["-c", &format!("printf '%s' '{group}/repeat=1' | sha256sum")])
        .output()
        .unwrap();
    let digest = String::from_utf8_lossy(&digest.stdout);
    assert_eq!(three[0]["id"].as_str().unwrap(), &digest[..12]);

    let search = expand(
        dir.path(),
        "search",
        r#"{ search = "concurrency", slo = { ttft_p99 = "<= 1s" }, repeat = 2 }"#,
    );
    let err = String::from_utf8_lossy(&search.stderr);
    assert!(!search.status.success());
    assert!(
        err.contains("a search cannot set `repeat`") && err.contains("search.toml:12:9"),
        "{err}"
    );
    let zero = expand(
        dir.path(),
        "zero",
        "{ concurrency = 1, requests = 2, repeat = 0 }",
    );
    let err = String::from_utf8_lossy(&zero.stderr);
    assert!(
        err.contains("matrix.load[0].repeat") && err.contains("from 1 to 1000"),
        "{err}"
    );
}
