//! The `evalscope` report preset prints EvalScope perf's summary per run: its
//! "Benchmarking summary" lines and its "Percentile results" table, from the stored
//! metrics, in seconds as EvalScope shows them; chosen by `[report] metrics = "evalscope"`
//! (as `import evalscope` writes it) or `perfplan report --metrics evalscope`.

mod report_support;

use perfplan::report::{self, Format, Layout, TableStyle};

fn evalscope() -> Layout {
    Layout::from_args(&[], &[], &["evalscope".to_string()])
}

#[test]
fn the_preset_prints_evalscopes_summary_and_percentiles_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = report_support::build_suite(dir.path(), 1.0);
    let table = report::render(
        &store,
        Format::Table,
        (&evalscope(), &[]),
        TableStyle::default(),
        &[],
    )
    .unwrap();
    for line in [
        "Benchmarking summary:",
        "Time taken for tests (s)",
        "Number of concurrency",
        "Total requests",
        "Succeed requests",
        "Failed requests",
        "Output token throughput (tok/s)",
        "Total token throughput (tok/s)",
        "Request throughput (req/s)",
        "Average latency (s)",
        "Average time to first token (s)",
        "Average time per output token (s)",
        "Average inter-token latency (s)",
        "Average input tokens per request",
        "Average output tokens per request",
        "Percentile results:",
        "TTFT (s)",
        "Latency (s)",
    ] {
        assert!(table.contains(line), "{line} missing:\n{table}");
    }
    let runs = store.runs().unwrap();
    let first = &runs[0];
    // Seconds, as EvalScope shows them: the stored ms / 1000, four decimals.
    let ttft_p50 = first.metrics["ttft_p50"].unwrap() / 1000.0;
    let section = table.split("Percentile results:").nth(1).unwrap();
    let row_50 = section
        .lines()
        .find(|l| l.trim_start().starts_with("50%"))
        .unwrap();
    assert!(row_50.contains(&format!("{ttft_p50:.4}")), "{row_50}");
    for pct in ["10%", "25%", "75%", "90%", "95%", "99%"] {
        assert!(
            section.lines().any(|l| l.trim_start().starts_with(pct)),
            "{pct}"
        );
    }
    insta::assert_snapshot!("evalscope_preset_table", table);
    let md = report::render(
        &store,
        Format::Md,
        (&evalscope(), &[]),
        TableStyle::default(),
        &[],
    )
    .unwrap();
    assert!(
        md.contains("**Benchmarking summary**") && md.contains("| 99% |"),
        "{md}"
    );
}

#[test]
fn report_metrics_evalscope_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = report_support::build_suite(dir.path(), 1.0);
    drop(store);
    let db = dir.path().join("results.db");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["report", db.to_str().unwrap(), "--metrics", "evalscope"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // The synthetic suite's gates fail (exit 1); the report is printed either way.
    assert!(
        out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("Benchmarking summary:") && text.contains("Percentile results:"),
        "{text}"
    );
}
