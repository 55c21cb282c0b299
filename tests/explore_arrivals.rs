//! The exploring load by rate takes an open loop's arrivals (`arrivals`, `burstiness`)
//! through the CLI against the built-in simulator: with `constant`, every gap inside a
//! level is 1/rate across a change of rate; by concurrency they are a located error.
//! Kept apart from `tests/explore.rs`, whose simulator tests judge timing in parallel
//! (about 2 s).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use cli_support::{query, report_json, run};

use cli_support::EXPLORE_HEAD as HEAD;

/// An exploring run of `load` against the simulator: its folder, its plan, each step's
/// rate and every request's intended send time (µs, in order).
fn explored(load: &str) -> (tempfile::TempDir, std::path::PathBuf, Vec<f64>, Vec<i64>) {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    let rates: Vec<f64> = runs[0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rate"].as_f64().unwrap())
        .collect();
    let sent = query::<i64>(&db, "SELECT intended_us FROM requests ORDER BY intended_us")
        .into_iter()
        .map(|r| r[0].unwrap())
        .collect();
    (dir, plan, rates, sent)
}

/// By rate, arrivals are spaced as an open loop's (`arrivals`, `burstiness`): with
/// `constant`, every gap inside a level is 1/rate, and the rate's change rescales the
/// one clock. By concurrency they mean nothing, and are a located error.
#[test]
fn by_rate_takes_the_open_loops_arrivals() {
    let load = r#"load = { explore = { by = "rate", from = 20, max = 80, step = "500ms", probes = 0 }, arrivals = "constant" }"#;
    let (_dir, plan, rates, sent) = explored(load);
    assert_eq!(rates, [20.0, 40.0, 80.0]);
    let gaps_in = |from: i64, to: i64| -> Vec<i64> {
        sent.windows(2)
            .filter(|w| w[0] >= from && w[1] < to)
            .map(|w| w[1] - w[0])
            .collect()
    };
    for (from, to, gap) in [(0, 480_000, 50_000), (560_000, 960_000, 25_000)] {
        let gaps = gaps_in(from, to);
        assert!(gaps.len() >= 7, "{gaps:?}");
        assert!(
            gaps.iter().all(|g| (g - gap).abs() <= 2),
            "{from}..{to} µs: {gaps:?}"
        );
    }
    for (extra, said) in [
        (
            r#"{ explore = { step = "1s" }, arrivals = "constant" }"#,
            "only with `by = \"rate\"`",
        ),
        (
            r#"{ explore = { by = "rate", step = "1s" }, burstiness = 0.5 }"#,
            "without `arrivals = \"gamma\"`",
        ),
        (
            r#"{ explore = { by = "rate", step = "1s" }, arrivals = "gamma", burstiness = 0.5 }"#,
            "",
        ),
    ] {
        let text = format!("{HEAD}\n[matrix]\nload = {extra}\n");
        cli_support::expands(&plan, &text, said, extra);
    }
}

/// A fractional `from` walks in hundredths of a req/s: 2.5, 5 and 10 req/s, each level's
/// constant gaps 1/rate (400 ms at 2.5 req/s); a rate finer than a hundredth, or a
/// fractional number of users, is a located error.
#[test]
fn by_rate_levels_may_be_fractional() {
    let load = r#"load = { explore = { by = "rate", from = 2.5, max = 10, step = "1s", probes = 0 }, arrivals = "constant" }"#;
    let (dir, plan, rates, sent) = explored(load);
    assert_eq!(rates, [2.5, 5.0, 10.0]);
    // The report shows each level as the plan would name it.
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("step 1s arrivals=constant | 1 | 2.5 |"), "{md}");
    let first: Vec<i64> = sent.windows(2).take(2).map(|w| w[1] - w[0]).collect();
    assert!(
        first.iter().all(|g| (g - 400_000).abs() <= 2),
        "{first:?} µs between the first arrivals at 2.5 req/s"
    );
    for (bad, said) in [
        (
            r#"{ explore = { by = "rate", from = 0.125, step = "1s" } }"#,
            "in hundredths",
        ),
        (
            r#"{ explore = { from = 1.5, step = "1s" } }"#,
            "whole number of requests",
        ),
    ] {
        let text = format!("{HEAD}\n[matrix]\nload = {bad}\n");
        cli_support::expands(&plan, &text, said, bad);
    }
}
