//! `perfplan history` over ten simulator suites of one small plan, release 1.6 planted
//! with a TTFT three times the others' (and kept from there on, as a regression is):
//! the step into 1.6 is the only one marked, in the table, the CSV, the JSON and the
//! HTML page; suites given out of order come out in release order (1.10 after 1.9); a
//! suite of another plan is left out and said; a gate against the history passes on
//! the whole history and fails on the history that ends at the regression.
//!
//! The rule is `compare`'s, with one setting: on a shared two-core test machine a
//! scheduling stall of 20 ms moves the p99 of twelve requests by a third, and builds
//! running beside the test once made one suite's mean TPOT 78% slower, real changes the
//! rule rightly calls beyond noise. The test asks for changes of 100% or more of TTFT
//! and TPOT and 40% of throughput (`--min-effect`), which the planted regression (+200%
//! TTFT, −57% throughput, TPOT unchanged) clears by far.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::{perfplan, stdout_of};
use serde_json::Value;

const PLAN: &str = r#"
[plan]
name = "hist"
seed = 3

[endpoints.sim]
base_url = "sim://h"

[endpoints.sim.sim]
ttft_base = "60ms"
itl_base = "10ms"
jitter = 0.1

[models.m]

[datasets.p]
kind = "prompt"
text = "history please"

[defaults]
output_tokens = 4
ignore_eos = true

[matrix]
load = [{ concurrency = 2, requests = 12 }, { concurrency = 4, requests = 12 }]
"#;

/// Runs the plan as release `1.{i}` (with `sets` added) into `dir/s{i}{tag}`.
fn suite(dir: &Path, i: u32, tag: &str, sets: &[&str]) -> PathBuf {
    let plan = dir.join("plan.toml");
    let out = dir.join(format!("s{i}{tag}"));
    let release = format!("plan.labels.release=1.{i}");
    let mut args = vec![
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        &release,
    ];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = perfplan(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Changes smaller than this are not called changes here (see the module's comment).
const MIN_EFFECT: [&str; 6] = [
    "--min-effect",
    "ttft_p99=100%",
    "--min-effect",
    "tpot_mean=100%",
    "--min-effect",
    "output_tps=40%",
];

fn history(suites: &[PathBuf], extra: &[&str]) -> std::process::Output {
    let mut args: Vec<&str> = vec!["history", "--by", "release"];
    args.extend(MIN_EFFECT);
    args.extend(suites.iter().map(|p| p.to_str().unwrap()));
    args.extend(extra);
    perfplan(&args)
}

#[test]
fn a_planted_regression_is_the_only_step_marked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.toml"), PLAN).unwrap();
    let mut suites: Vec<PathBuf> = (1..=10)
        .map(|i| {
            let ttft: &[&str] = if i >= 6 {
                &["endpoints.sim.sim.ttft_base=180ms"]
            } else {
                &[]
            };
            suite(dir.path(), i, "", ttft)
        })
        .collect();
    let all_ten = suites.clone();
    suites.reverse(); // the order given is not the order shown
    suites.push(suite(dir.path(), 5, "-other", &["plan.name=other"]));
    let paths: Vec<&str> = suites.iter().map(|p| p.to_str().unwrap()).collect();
    let html = dir.path().join("history.html");

    // The CSV: one row per run, metric and release; only the steps into 1.6 judged.
    let mut args = vec!["history", "--by", "release", "--format", "csv"];
    args.extend(MIN_EFFECT);
    args.extend(&paths);
    args.extend(["--html", html.to_str().unwrap()]);
    let out = perfplan(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("left out") && stderr.contains("plan `other`, not `hist`"),
        "{stderr}"
    );
    let csv = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2 * 3 * 10, "{csv}");
    let releases: Vec<&str> = rows.iter().take(10).map(|r| r[2]).collect();
    let want: Vec<String> = (1..=10).map(|i| format!("1.{i}")).collect();
    assert_eq!(releases, want, "{csv}");
    let mut marked: Vec<(String, String, String)> = rows
        .iter()
        // A step the verdicts leave unjudged (a run found client-bound on a busy
        // machine) is said, not marked.
        .filter(|r| !matches!(r[9], "" | "no change" | "not judged"))
        .map(|r| {
            (
                r[0].to_string(),
                r[1].to_string(),
                format!("{} {}", r[2], r[9]),
            )
        })
        .collect();
    marked.sort();
    let expect: Vec<(String, String, String)> = ["concurrency=2", "concurrency=4"]
        .iter()
        .flat_map(|run| {
            ["output_tps", "ttft_p99"]
                .map(|m| (run.to_string(), m.to_string(), "1.6 worse".to_string()))
        })
        .collect();
    assert_eq!(marked, expect, "{csv}");
    // Every point has its interval, and the regression is three times the TTFT.
    assert!(
        rows.iter().all(|r| !r[5].is_empty() && !r[6].is_empty()),
        "{csv}"
    );

    // The table says the same, in the cell of 1.6.
    let table = String::from_utf8_lossy(&history(&suites, &[]).stdout).into_owned();
    let count = |t: &str| {
        table.matches(&format!("{t} +")).count() + table.matches(&format!("{t} -")).count()
    };
    assert_eq!((count("▲ worse"), count("▼ better")), (4, 0), "{table}");
    assert!(table.contains("4 steps beyond noise"), "{table}");

    // The JSON: ten releases in order, four steps judged worse.
    let json: Value = serde_json::from_str(&stdout_of(
        &[
            &["history", "--by", "release", "--format", "json"],
            &MIN_EFFECT[..],
            &paths[..],
        ]
        .concat(),
    ))
    .unwrap();
    assert_eq!(json["releases"].as_array().unwrap().len(), 10, "{json}");
    assert_eq!(json["releases"][9]["label"], "1.10");
    let worse = json["lines"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["points"].as_array().unwrap().clone())
        .filter(|p| p["step"]["judgement"] == "worse")
        .count();
    assert_eq!(worse, 4, "{json}");

    // The page: four red cells, four red triangles, nothing green.
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("class=\"n worse\"").count(), 4, "{csv}");
    assert_eq!(page.matches("<path class=\"worse\"").count(), 4, "{csv}");
    assert!(!page.contains("class=\"better\"") && !page.contains("n better"));
    assert_eq!(page.matches("<svg").count(), 6, "{csv}");

    // A gate against the history: the newest release within 5% of the last five's median.
    let gate = ["--gate", "ttft_p99 <= median(last 5) +5%"];
    let passed = history(&all_ten, &gate);
    let text = String::from_utf8_lossy(&passed.stdout);
    assert_eq!(passed.status.code(), Some(0), "{text}");
    assert_eq!(text.matches("PASS").count(), 2, "{text}");
    let failed = history(&all_ten[..6], &gate);
    let text = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("FAIL").count(), 2, "{text}");
}

/// Repeated runs are one point each, their mean with Student's t interval over the
/// repeats; the steps between them are judged over the repeats (Welch), as `compare`.
#[test]
fn repeats_are_one_point_with_their_interval() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN
        .replace(
            "load = [{ concurrency = 2, requests = 12 }, { concurrency = 4, requests = 12 }]",
            "load = { concurrency = 4, requests = 8, repeat = 3 }",
        )
        .replace("ttft_base = \"60ms\"", "ttft_base = \"10ms\"")
        .replace("itl_base = \"10ms\"", "itl_base = \"2ms\"");
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    let suites: Vec<PathBuf> = (1..=3).map(|i| suite(dir.path(), i, "", &[])).collect();
    let out = history(&suites, &["--format", "json", "--metrics", "ttft_mean"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines = json["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "one line for the group: {json}");
    for p in lines[0]["points"].as_array().unwrap() {
        assert_eq!(p["repeats"], 3, "{p}");
        let (low, high) = (
            p["interval"][0].as_f64().unwrap(),
            p["interval"][1].as_f64().unwrap(),
        );
        let v = p["value"].as_f64().unwrap();
        assert!(low < v && v < high, "{p}");
    }
}
