//! `compare` of exploring runs through the CLI against the built-in simulator (jitter on):
//! repeated three times on both sides, the knee, saturation point, goodput and cost are
//! judged by the repeats' Welch interval, as every repeated metric is: doubling the
//! simulator's batch slots (4 → 8) is named a change, the same capacity run again is not.
//! One exploring run a side is not judged for noise at all, and says so (its figures come
//! from the levels its walk held, which its requests' bootstrap cannot see). About 25 s.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::run;
use serde_json::Value;

/// The capacity metrics compared.
const METRICS: &str = "saturation_concurrency,saturation_output_tps,knee_output_tps,\
goodput_tokens_per_s,cost_per_million_output_tokens";

/// A simulator of `slots` batch slots, ~80 ms a request, explored from 2 users in
/// 800 ms steps (ten requests' time: a step's transient fades), `repeat` times. No
/// probes: the saturation point is the last doubling that gained (4 of 4 slots, 8 of 8),
/// so the repeats measure the walk's noise, not a bisection's.
fn plan(slots: u32, repeat: u32) -> String {
    let repeat = if repeat > 1 {
        format!(", repeat = {repeat}")
    } else {
        String::new()
    };
    format!(
        r#"
[plan]
name = "explore-compare"
seed = 5

[endpoints.sim]
base_url = "sim://explore"
hardware = {{ accelerators = 1, cost_per_hour = 2.0 }}

[endpoints.sim.sim]
ttft_base = "20ms"
itl_base = "4ms"
max_num_seqs = {slots}
jitter = 0.1

[models.m]

[datasets.p]
kind = "prompt"
text = "hi"

[defaults]
output_tokens = 16
ignore_eos = true

[matrix]
load = {{ explore = {{ from = 2, max = 64, step = "800ms", probes = 0 }}{repeat} }}

[slo]
ttft = "<= 1s"
"#
    )
}

fn suite(dir: &Path, name: &str, slots: u32, repeat: u32) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, plan(slots, repeat)).unwrap();
    run(&path, &dir.join(name))
}

fn compare(base: &Path, new: &Path) -> Value {
    let o = cli_support::compare_accepting_client_bound(
        base,
        new,
        &["--metrics", METRICS, "--format", "json"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The one pair's metrics.
fn metrics(c: &Value) -> &serde_json::Map<String, Value> {
    let pairs = c["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{c}");
    pairs[0]["metrics"].as_object().unwrap()
}

#[test]
fn repeated_exploring_runs_are_judged_by_their_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let base = suite(&d, "base", 4, 3);
    let same = suite(&d, "same", 4, 3);
    let wider = suite(&d, "wider", 8, 3);

    // Twice the slots: the saturation point and its throughput are named better, by the
    // repeats' interval (3 against 3), and the cost of a million tokens falls.
    let c = compare(&base, &wider);
    let m = metrics(&c);
    for name in ["saturation_concurrency", "saturation_output_tps"] {
        let d = &m[name];
        assert_eq!(d["repeats"]["base"], 3, "{name}: {d}");
        assert_eq!(d["beyond_noise"], true, "{name}: {d}");
        assert!(d["delta"].as_f64().unwrap() > 0.0, "{name}: {d}");
    }
    let cost = &m["cost_per_million_output_tokens"];
    assert_eq!(cost["beyond_noise"], true, "{cost}");
    assert!(cost["delta"].as_f64().unwrap() < 0.0, "{cost}");
    let sat = &m["saturation_concurrency"];
    assert!(sat["base"].as_f64().unwrap() < 8.0, "{sat}");
    assert!(sat["new"].as_f64().unwrap() >= 8.0, "{sat}");
    let o = cli_support::compare_accepting_client_bound(&base, &wider, &["--metrics", METRICS]);
    let table = String::from_utf8_lossy(&o.stdout);
    let row = table
        .lines()
        .find(|l| l.contains("saturation_concurrency"))
        .unwrap();
    assert!(row.contains("better (beyond noise)"), "{table}");
    assert!(table.contains("(3 vs 3 repeats)"), "{table}");

    // The same capacity again: no capacity metric is called a change.
    let c = compare(&base, &same);
    for (name, d) in metrics(&c) {
        assert_eq!(d["repeats"]["new"], 3, "{name}: {d}");
        assert_ne!(d["beyond_noise"], true, "{name} called a change: {d}");
        assert!(d["not_judged_because"].is_null(), "{name}: {d}");
    }
}

#[test]
fn one_exploring_run_a_side_is_not_judged_for_noise() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let base = suite(&d, "base", 4, 1);
    let wider = suite(&d, "wider", 8, 1);
    // Even every default metric (throughputs, latencies: all of the walk's levels) is
    // left unjudged, with the reason, and the deltas are still given.
    let o = cli_support::compare_accepting_client_bound(&base, &wider, &["--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = metrics(&c);
    assert!(m.contains_key("saturation_concurrency") && m.contains_key("output_tps"));
    for (name, d) in m {
        assert!(d["beyond_noise"].is_null(), "{name}: {d}");
        assert_eq!(
            d["not_judged_because"], "one exploring run a side: no noise estimate",
            "{name}: {d}"
        );
    }
    assert!(m["saturation_concurrency"]["delta"].as_f64().unwrap() > 0.0);
    let o = cli_support::compare_accepting_client_bound(&base, &wider, &[]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("0 worse, 0 better"), "{table}");
    assert!(
        table.contains("not judged (one exploring run a side: no noise estimate)"),
        "{table}"
    );
    assert!(table.contains("Repeat the load (`repeat = 3`)"), "{table}");
}
