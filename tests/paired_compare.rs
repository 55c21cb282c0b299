//! `compare --paired` against two simulators whose TTFT differs by a known 5 ms, with
//! prompts of very different lengths (prefill makes TTFT vary from prompt to prompt):
//! the paired per-request interval contains the 5 ms and is far tighter than the
//! unpaired bootstrap interval of the same delta. (Repeats pairing repeat by repeat:
//! tests/repeats.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::Value;

use cli_support::stdout_of as perfplan;

fn plan(name: &str, base_url: &str) -> String {
    let tokenizer = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/smollm2");
    format!(
        r#"
[plan]
name = "paired"
seed = 3
[endpoints.{name}]
base_url = "{base_url}"
[models.m]
tokenizer = "{tokenizer}"
[datasets.d]
kind = "random"
input_tokens = {{ min = 50, max = 1500 }}
[defaults]
output_tokens = 3
ignore_eos = true
[matrix]
load = {{ concurrency = 4, requests = 24, warmup = 4 }}
"#
    )
}

async fn suite(dir: &Path, name: &str, ttft_ms: u64) -> String {
    let config = SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(ttft_ms)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        prefill_tokens_per_s: 20_000.0,
        prefix_cache: false,
        ..SimConfig::default()
    };
    let sim = SimServer::start(config).await.unwrap();
    let plan_path = dir.join(format!("{name}.toml"));
    std::fs::write(&plan_path, plan(name, &sim.base_url())).unwrap();
    let out = dir.join(name);
    perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    sim.shutdown().await;
    out.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paired_comparison_finds_a_known_shift_with_a_tight_interval() {
    let dir = tempfile::tempdir().unwrap();
    let base = suite(dir.path(), "fast", 20).await;
    let new = suite(dir.path(), "slow", 25).await;
    let args = ["compare", &base, &new, "--ignore", "endpoint", "--paired"];
    let json: Value = serde_json::from_str(&perfplan(
        &[&args[..], &["--metrics", "ttft_mean", "--format", "json"]].concat(),
    ))
    .unwrap();
    let paired = json["paired"].as_array().unwrap();
    assert_eq!(paired.len(), 1, "{json}");
    let p = &paired[0];
    assert!(p["refused"].is_null(), "{p}");
    assert_eq!(
        p["unpaired"], 0,
        "every measured request has its partner: {p}"
    );
    let ttft = &p["stats"]["ttft"];
    assert_eq!(ttft["n"], 24);
    let (lo, hi) = (
        ttft["mean_low"].as_f64().unwrap(),
        ttft["mean_high"].as_f64().unwrap(),
    );
    // The truth is +5 ms; a margin of 1 ms for timer rounding on either side.
    assert!(lo - 1.0 <= 5.0 && 5.0 <= hi + 1.0, "{ttft}");
    assert!(lo > 0.0, "the shift is found: {ttft}");
    // Prompts of 50..1500 tokens (2.5..75 ms of prefill): the unpaired bootstrap of mean
    // TTFT sees that spread; the paired differences do not.
    let unpaired = &json["pairs"][0]["metrics"]["ttft_mean"];
    let width = unpaired["ci_high"].as_f64().unwrap() - unpaired["ci_low"].as_f64().unwrap();
    assert!(
        (hi - lo) * 4.0 < width,
        "paired [{lo}, {hi}] vs unpaired {unpaired}"
    );
    let table = perfplan(&args);
    eprintln!("{table}");
    assert!(table.contains("paired per request:"), "{table}");
    let ttft_line = table.lines().find(|l| l.contains("ttft (ms)")).unwrap();
    assert!(ttft_line.contains("worse (beyond noise)"), "{table}");
}
