//! `compare` and gates on synthetic suites: a 20% slower suite is flagged beyond
//! noise, a suite against itself is not; gates pass and fail with exit codes through
//! the binary, naming the gate, the run and the measured value.

mod report_support;

use std::process::Command;

use perfplan::report::bootstrap::BootstrapOptions;
use perfplan::report::compare::{compare, CompareOptions};
use perfplan::report::gates;
use perfplan::store::Store;

fn opts() -> CompareOptions {
    CompareOptions {
        metrics: vec![
            "ttft_p50".into(),
            "tpot_mean".into(),
            "output_tps".into(),
            "success_ratio".into(),
        ],
        bootstrap: BootstrapOptions {
            resamples: 300,
            ..BootstrapOptions::default()
        },
        ..CompareOptions::default()
    }
}

#[test]
fn slower_suite_is_beyond_noise_and_itself_is_not() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base = report_support::build_suite(a.path(), 1.0);
    let slow = report_support::build_suite(b.path(), 1.2);
    let c = compare(&base, &slow, &opts()).unwrap();
    assert_eq!(c.pairs.len(), report_support::points().len());
    for pair in c
        .pairs
        .iter()
        .filter(|p| p.new.status == perfplan::store::RunStatus::Done)
    {
        for d in &pair.deltas {
            match d.metric.as_str() {
                "ttft_p50" | "tpot_mean" | "output_tps" => {
                    assert_eq!(d.beyond_noise, Some(true), "{} {:?}", pair.new.id, d)
                }
                _ => assert_eq!(d.beyond_noise, None),
            }
        }
        let ttft = &pair.deltas[0];
        assert!(ttft.delta_pct.unwrap() > 10.0, "{ttft:?}");
    }
    let same = compare(&base, &base, &opts()).unwrap();
    assert!(same
        .pairs
        .iter()
        .all(|p| p.deltas.iter().all(|d| d.beyond_noise != Some(true))));
}

#[test]
fn runs_match_by_axes_not_position_and_unmatched_are_listed() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base = report_support::build_suite(a.path(), 1.0);
    let new = report_support::build_suite(b.path(), 1.0);
    // Ignoring the endpoint, each key appears twice per side: first ones pair, the rest are listed.
    let mut o = opts();
    o.ignore = vec!["endpoint".into()];
    let c = compare(&base, &new, &o).unwrap();
    assert!(c.pairs.iter().all(|p| p.base.axes == p.new.axes));
    assert_eq!(
        c.pairs.len() + c.only_new.len(),
        report_support::points().len()
    );
    assert!(!c.only_base.is_empty() && c.only_base.len() == c.only_new.len());
}

#[test]
fn gates_pass_and_fail_through_the_binary() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    drop(report_support::build_suite(a.path(), 1.0));
    drop(report_support::build_suite(b.path(), 1.2));
    let bin = env!("CARGO_BIN_EXE_perfplan");
    let run = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };

    // The plan's gates: the pending run fails them; a suite with a pending run does not sign off.
    let out = run(&["report", a.path().to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("#10 endpoint=cache-off cache_state=warm load=concurrency=8")
            && stdout.contains("run is pending"),
        "{stdout}"
    );

    // A failing command-line gate names the gate, the run and the measured value.
    let out = run(&[
        "report",
        a.path().to_str().unwrap(),
        "--gate",
        "ttft_p50=<=60ms",
        "--format",
        "md",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("❌ FAIL")
            && stdout.contains("#1 endpoint=cache-on cache_state=cold")
            && stdout.contains("ttft_p50 = 88.34 ms"),
        "{stdout}"
    );

    // Relative gates against a baseline: the 20% slower suite fails -5% on throughput.
    let out = run(&[
        "compare",
        a.path().to_str().unwrap(),
        b.path().to_str().unwrap(),
        "--gate",
        "output_tps=>=-5%",
        "--resamples",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("beyond noise") && stdout.contains("output_tps = "),
        "{stdout}"
    );

    // Gates stored in the database.
    let store = Store::open(b.path()).unwrap();
    assert!(store
        .gate_results()
        .unwrap()
        .iter()
        .any(|g| g.gate == "output_tps" && !g.passed));
}

#[test]
fn passing_gates_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = report_support::build_suite(dir.path(), 1.0);
    store.begin_run("cache-off-warm-c8").unwrap();
    let recs = report_support::records(&report_support::points()[10], 1.0, 7);
    let batch: Vec<_> = recs
        .iter()
        .map(|r| perfplan::store::StoredRequest {
            record: r,
            target_input_tokens: None,
        })
        .collect();
    store.write_requests("cache-off-warm-c8", &batch).unwrap();
    let metrics = report_support::metrics_of(&store, "cache-off-warm-c8");
    let finish = perfplan::store::RunFinish {
        status: perfplan::store::RunStatus::Done,
        metrics: &metrics,
        facts: &perfplan::record::RunFacts::default(),
        warnings: &[],
        error: None,
        verdict: None,
    };
    store.finish_run("cache-off-warm-c8", &finish).unwrap();
    let verdicts = gates::check_suite(&mut store, "report", (&[], &[]), None).unwrap();
    assert_eq!(verdicts.len(), 2 * report_support::points().len());
    assert!(gates::all_passed(&verdicts), "{verdicts:?}");
    drop(store);
    let out = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["report", dir.path().to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let missing = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["report", dir.path().join("nope").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        missing.status.code(),
        Some(perfplan::cli::exit::DATABASE.into())
    );
}

#[test]
fn compare_and_gate_markdown_snapshots() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base = report_support::build_suite(a.path(), 1.0);
    let mut slow = report_support::build_suite(b.path(), 1.2);
    let mut o = opts();
    o.metrics = vec!["ttft_p50".into(), "output_tps".into()];
    let c = compare(&base, &slow, &o).unwrap();
    let md =
        perfplan::report::compare::render(&c, perfplan::report::Format::Md, Default::default())
            .unwrap();
    insta::assert_snapshot!("compare_md", md);
    let verdicts = gates::check_suite(
        &mut slow,
        "compare",
        (&["output_tps=>=-5%".into()], &[]),
        Some(gates::BaselineSuite::new(&base)),
    )
    .unwrap();
    let md = gates::render(&verdicts, perfplan::report::Format::Md, Default::default());
    insta::assert_snapshot!("gates_md", md);
}
