//! Exports of a synthetic suite: snapshots of what people read (table, Markdown) and
//! machine formats (CSV, JSON) with a fixed shape, and CSV/JSON round-tripping the
//! stored numbers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod report_support;

use perfplan::metrics::names;
use perfplan::report::{self, Format, Layout, TableStyle};
use serde_json::Value;

fn render(store: &perfplan::store::Store, format: Format) -> String {
    report::render(
        store,
        format,
        (&Layout::default(), &[]),
        TableStyle::default(),
        &[],
    )
    .unwrap()
}

#[test]
fn table_and_markdown_pivot_endpoints_and_cache_states_by_tier() {
    let dir = tempfile::tempdir().unwrap();
    let store = report_support::build_suite(dir.path(), 1.0);
    let table = render(&store, Format::Table);
    insta::assert_snapshot!("pivot_table", table);
    let md = render(&store, Format::Md);
    let md = md.replace(&store.suite().unwrap().plan_sha256[..12], "[sha]");
    let md = md.replace(env!("CARGO_PKG_VERSION"), "[version]");
    insta::assert_snapshot!("pivot_md", md);
    assert!(table.contains("—"), "a missing combination shows as such");
    assert!(table.contains("pending"), "a pending run shows its status");
}

#[test]
fn json_has_designs_shape_and_every_metric() {
    let dir = tempfile::tempdir().unwrap();
    let store = report_support::build_suite(dir.path(), 1.0);
    let json: Value = serde_json::from_str(&render(&store, Format::Json)).unwrap();
    let runs = json.as_array().unwrap();
    assert_eq!(runs.len(), report_support::points().len());
    for run in runs {
        let keys: Vec<&str> = run
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        // DESIGN's keys first, then the run's health and verdicts (added, never renamed).
        assert_eq!(
            keys,
            [
                "id",
                "ordinal",
                "status",
                "verdict",
                "axes",
                "metrics",
                "failed_requests",
                "failures",
                "client_bound",
                "warnings",
                "error",
                "gates",
                "environment",
                "clock"
            ]
        );
        let metrics: Vec<String> = run["metrics"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(metrics, names::all_names());
    }
    let first = &runs[0];
    assert_eq!(first["axes"]["load"]["concurrency"], 1);
    assert!(first["metrics"]["cache_hit_ratio"].is_null());
    // Counts are integers, other metrics numbers.
    assert!(
        first["metrics"]["requests_ok"].is_u64(),
        "{}",
        first["metrics"]
    );
    assert!(first["metrics"]["ttft_p50"].is_f64());
    let pending = runs.iter().find(|r| r["status"] == "pending").unwrap();
    assert!(pending["metrics"]["ttft_p50"].is_null());
    // Shape snapshot on one run, numbers redacted.
    let mut shape = first.clone();
    for v in shape["metrics"].as_object_mut().unwrap().values_mut() {
        if v.is_number() {
            *v = Value::from("[number]");
        }
    }
    insta::assert_json_snapshot!("json_run_shape", shape);
}

/// Splits one CSV line (no embedded newlines in this fixture).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn csv_and_json_round_trip_the_stored_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let store = report_support::build_suite(dir.path(), 1.0);
    let runs = store.runs().unwrap();
    let csv = render(&store, Format::Csv);
    // serde_json's default parser is not correctly rounded, so read the JSON numbers'
    // text with Rust's exact parser: every run's metrics, in order, one per line.
    let json_text = render(&store, Format::Json);
    let json_numbers: Vec<Option<f64>> = json_text
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            let (key, value) = l.split_once("\": ")?;
            let key = key.trim_start_matches('"');
            names::is_metric(key).then(|| value.trim_end_matches(',').parse::<f64>().ok())
        })
        .collect();
    let per_run = names::all_names().len();
    assert_eq!(json_numbers.len(), runs.len() * per_run);
    let mut lines = csv.split("\r\n").filter(|l| !l.is_empty());
    let header = fields(lines.next().unwrap());
    let mut expected = vec![
        "id",
        "ordinal",
        "status",
        "verdict",
        "verdict_reasons",
        "endpoint",
        "cache_state",
        "load",
        "concurrency",
        "rate",
        "requests",
        "duration",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    expected.extend(names::all_names());
    expected.extend(
        [
            "failed_requests",
            "failure_classes",
            "client_bound",
            "warnings_count",
        ]
        .map(String::from),
    );
    assert_eq!(header, expected);
    for ((line, run), numbers) in lines.zip(&runs).zip(json_numbers.chunks(per_run)) {
        let f = fields(line);
        assert_eq!(f[0], run.id);
        assert_eq!(f[3], run.verdict.status.as_str());
        assert_eq!(f[4], "");
        assert_eq!(f[7], run.axes["load"].to_string());
        // The load's own columns beside its JSON (kept for earlier readers).
        assert_eq!(f[8], run.axes["load"]["concurrency"].to_string());
        assert_eq!(f[10], report_support::REQUESTS.to_string());
        assert_eq!((f[9].as_str(), f[11].as_str()), ("", ""));
        for ((name, cell), from_json) in header.iter().zip(&f).skip(12).zip(numbers) {
            let stored = run.metrics.get(name).copied().flatten();
            let from_csv = (!cell.is_empty()).then(|| cell.parse::<f64>().unwrap());
            assert_eq!(from_csv, stored, "csv {name} of {}", run.id);
            assert_eq!(*from_json, stored, "json {name} of {}", run.id);
        }
    }
}

#[test]
fn csv_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = report_support::build_suite(dir.path(), 1.0);
    let csv = render(&store, Format::Csv);
    // Header and the first two runs, CRLF shown as line ends.
    let head: Vec<&str> = csv.split("\r\n").take(3).collect();
    insta::assert_snapshot!("csv_head", head.join("\n"));
}
