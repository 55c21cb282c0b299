//! `perfplan compare` of suites whose tiers differ only in their request counts (an
//! EvalScope sweep run again with other `--number`s) matches the tiers by their load's
//! shape, says so, and compares them; suites with no tier in common exit with
//! `NOTHING_MATCHED` (12) instead of an empty table and exit 0.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

fn plan(loads: &str) -> String {
    format!(
        r#"
[plan]
name = "shape"
[endpoints.sim]
base_url = "sim://shape"
[endpoints.sim.sim]
ttft_base = "2ms"
itl_base = "1ms"
[models.m]
[datasets.d]
kind = "prompt"
text = "compare me"
[defaults]
output_tokens = 4
ignore_eos = true
[matrix]
load = [{loads}]
[report]
metrics = ["ttft_p50", "output_tps"]
"#
    )
}

fn suite(dir: &Path, name: &str, loads: &str) -> String {
    let plan_path = dir.join(format!("{name}.toml"));
    std::fs::write(&plan_path, plan(loads)).unwrap();
    let out = dir.join(name);
    let o = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out.display().to_string()
}

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn tiers_differing_only_in_request_counts_match_by_their_load_shape() {
    let dir = tempfile::tempdir().unwrap();
    let short = suite(
        dir.path(),
        "short",
        "{ concurrency = 1, requests = 8 }, { concurrency = 2, requests = 8, warmup = 2 }",
    );
    let long = suite(
        dir.path(),
        "long",
        "{ concurrency = 1, requests = 16 }, { concurrency = 2, requests = 16, warmup = 4 }",
    );
    let out = perfplan(&["compare", &short, &long]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("2 matched runs (2 by their load's shape: only their request counts differ), 0 unmatched"),
        "{text}"
    );
    assert!(
        text.contains("matched by its load's shape; the request counts differ (base requests=8 warmup=2, new requests=16 warmup=4)"),
        "{text}"
    );
    let json = perfplan(&["compare", &short, &long, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert!(pairs.iter().all(|p| p["matched_by"] == "load_shape"), "{v}");
    // The same suite against itself matches by its axes, as before.
    let same = perfplan(&["compare", &short, &short, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&same.stdout).unwrap();
    assert!(v["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["matched_by"] == "axes"));
}

#[test]
fn suites_with_no_tier_in_common_exit_nothing_matched() {
    let dir = tempfile::tempdir().unwrap();
    let one = suite(dir.path(), "one", "{ concurrency = 1, requests = 8 }");
    let three = suite(dir.path(), "three", "{ concurrency = 3, requests = 8 }");
    let out = perfplan(&["compare", &one, &three]);
    assert_eq!(
        out.status.code(),
        Some(13),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nothing was compared"), "{stderr}");
    // The runs of each side are still listed.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("only in base") && text.contains("only in new"),
        "{text}"
    );
}
