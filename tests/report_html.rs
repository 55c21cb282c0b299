//! The HTML report: one self-contained page (no script, no network) with the pivot
//! table and every plot. With `PERFPLAN_DEMO_DIR` set, the suite and page are kept
//! there (for a look in a browser).

mod report_support;

use perfplan::report::{self, gates};

#[test]
fn html_report_is_self_contained_with_every_plot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir =
        std::env::var_os("PERFPLAN_DEMO_DIR").map_or_else(|| tmp.path().to_path_buf(), Into::into);
    let _ = std::fs::remove_file(dir.join("results.db"));
    let mut store = report_support::build_suite(&dir, 1.0);
    let verdicts =
        gates::check_suite(&mut store, "run", (&["ttft_p50=<=100ms".into()], &[]), None).unwrap();
    let written = report::write_outputs(&store, &dir, &verdicts).unwrap();
    assert_eq!(
        written,
        vec![dir.join("report.md"), dir.join("report.html")]
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for needle in [
        "TTFT p50 vs concurrency",
        "TPOT mean vs concurrency",
        "output throughput vs concurrency",
        "latency p50 vs output throughput (one point per tier)",
        "TTFT p99 vs output throughput (one point per tier)",
        "TTFT CDF",
        "TPOT CDF",
        "latency CDF",
        "<h2>Runs over time</h2>",
        ": requests</title>", // a request timeline per run
        "<h2>Gates: <span class=\"fail\">FAIL</span></h2>",
        "128 / 130 / 128", // target / client / server input tokens
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    let svgs = html.matches("<svg").count();
    let timelines = html.matches("<details class=\"run\"").count();
    assert!(timelines >= 2, "{timelines} timelines");
    let per_slice = html.matches(": TTFT per slice</title>").count();
    assert_eq!(per_slice, timelines, "every run's slices are drawn");
    // 10 suite charts, the bars, and per run a timeline and three slice charts.
    assert_eq!(
        svgs,
        10 + html.matches("side by side</title>").count() + 4 * timelines
    );
    assert!(html.contains("steady-state window") || html.contains("no steady-state window"));
    // Self-contained: no script, nothing loaded from anywhere (URLs appear only as text,
    // such as an endpoint's in the header).
    assert!(!html.contains("<script"));
    for attr in ["src=", "href=", "url("] {
        assert!(!html.contains(attr), "the page loads something: {attr}");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("### gates: FAIL"), "{md}");
}
