//! Comparisons say when they compare unlike things, through the CLI against the
//! simulator: two suites whose runs match by axis values but differ in a setting that
//! is not an axis (`defaults.output_tokens`, 16 vs 64) are listed per pair with the
//! setting and both values, and gates against such a baseline fail with their own exit
//! code unless `--allow-changed` names the setting. An axis left out with `--ignore`
//! does not count; endpoint settings are listed, never failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::perfplan;
use serde_json::Value;

fn plan(output_tokens: &str, ttft: &str, matrix_extra: &str) -> String {
    format!(
        r#"
[plan]
name = "changed"
seed = 4

[endpoints.sim]
base_url = "sim://s"

[endpoints.sim.sim]
ttft_base = "{ttft}"
itl_base = "1ms"

[models.m]

[datasets.p]
kind = "prompt"
text = "hello there"

[defaults]
{output_tokens}
ignore_eos = true

[matrix]
load = {{ concurrency = 2, requests = 24, warmup = 2 }}
{matrix_extra}
"#
    )
}

fn run(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let out = dir.join(name);
    cli_support::run(&path, &out);
    out
}

fn compare(base: &Path, new: &Path, more: &[&str]) -> (Option<i32>, String, String) {
    // What is compared here is settings, not trust (see the helper).
    let o = cli_support::compare_accepting_client_bound(base, new, more);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_setting_beyond_the_axes_is_named_and_fails_baseline_gates() {
    let dir = tempfile::tempdir().unwrap();
    let base = run(dir.path(), "base", &plan("output_tokens = 16", "5ms", ""));
    let new = run(dir.path(), "new", &plan("output_tokens = 64", "5ms", ""));

    let (code, text, err) = compare(&base, &new, &[]);
    assert_eq!(code, Some(0), "{text}{err}");
    assert!(
        text.contains(
            "compares unlike runs, settings differ beyond the axes: request.output_tokens 16 → 64"
        ),
        "{text}"
    );
    assert!(text.contains("1 pair(s) compare unlike runs"), "{text}");
    assert!(text.contains("; settings differ"), "{text}");
    let (_, json, _) = compare(&base, &new, &["--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let changed = &json["pairs"][0]["changed"][0];
    assert_eq!(changed["setting"], "request.output_tokens");
    assert_eq!(
        (changed["base"].as_str(), changed["new"].as_str()),
        (Some("16"), Some("64"))
    );
    assert_eq!(json["pairs"][0]["unlike"], true);

    // A relative gate against the unlike baseline fails, with its own exit code.
    let gate = ["--gate", "output_tps=>=-50%"];
    let (code, text, _) = compare(&base, &new, &gate);
    assert_eq!(code, Some(9), "{text}");
    assert!(
        text.contains("differs beyond the axes (request.output_tokens 16 → 64)")
            && text.contains("--allow-changed request.output_tokens"),
        "{text}"
    );
    let allowed = [&gate[..], &["--allow-changed", "output_tokens"]].concat();
    let (code, text, _) = compare(&base, &new, &allowed);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("allowed by --allow-changed"), "{text}");
    // The same through `report --baseline` and `run --baseline`.
    let o = perfplan(&[
        "report",
        new.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "--gate",
        "output_tps=>=-50%",
    ]);
    assert_eq!(o.status.code(), Some(9));
    let again = dir.path().join("again");
    let o = perfplan(&[
        "run",
        dir.path().join("new.toml").to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "--gate",
        "output_tps=>=-50%",
    ]);
    assert_eq!(
        o.status.code(),
        Some(9),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn ignored_axes_and_endpoint_settings_do_not_fail_gates() {
    let dir = tempfile::tempdir().unwrap();
    let base = run(dir.path(), "base", &plan("", "5ms", "output_tokens = [16]"));
    let new = run(dir.path(), "new", &plan("", "8ms", "output_tokens = [64]"));
    let gate = ["--gate", "output_tps=>=-99%", "--ignore", "output_tokens"];
    let (code, text, _) = compare(&base, &new, &gate);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("unlike"), "{text}");
    assert!(
        text.contains(
            "endpoint settings differ (listed, not judged): endpoint.sim.ttft_base 5ms → 8ms"
        ),
        "{text}"
    );
}
