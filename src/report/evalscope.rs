//! The `evalscope` preset (`[report] metrics = "evalscope"`, `report --metrics
//! evalscope`): what EvalScope perf prints after each run, per run of the suite — its
//! "Benchmarking summary" (time taken, concurrency or rate, request counts, request and
//! token throughput, average latency, TTFT, TPOT, ITL, average input and output tokens)
//! and its "Percentile results" (TTFT, ITL, TPOT, latency in seconds, input and output
//! tokens, per-request output tok/s at p10 … p99), with EvalScope's titles, from the
//! stored metrics. Times are seconds, as EvalScope shows them. EvalScope's p66, p80 and
//! p98 rows and its per-request "Total (tok/s)" column are not measured by perfplan and
//! are left out.

use serde_json::Value;

use super::grid::{Grid, UNKNOWN};
use super::pivot::Labels;
use super::ReportData;
use crate::metrics::presets::{EVALSCOPE_COLUMNS, EVALSCOPE_PERCENTILES};
use crate::store::StoredRun;

/// The summary lines: (title, metric, scale to EvalScope's unit, decimals).
const SUMMARY: [(&str, &str, f64, usize); 12] = [
    ("Time taken for tests (s)", "duration_s", 1.0, 4),
    ("Succeed requests", "requests_ok", 1.0, 0),
    ("Failed requests", "requests_failed", 1.0, 0),
    ("Output token throughput (tok/s)", "output_tps", 1.0, 4),
    ("Total token throughput (tok/s)", "total_tps", 1.0, 4),
    ("Request throughput (req/s)", "rps", 1.0, 4),
    ("Average latency (s)", "latency_mean", 1e-3, 4),
    ("Average time to first token (s)", "ttft_mean", 1e-3, 4),
    ("Average time per output token (s)", "tpot_mean", 1e-3, 4),
    ("Average inter-token latency (s)", "itl_mean", 1e-3, 4),
    (
        "Average input tokens per request",
        "input_tokens_mean",
        1.0,
        4,
    ),
    (
        "Average output tokens per request",
        "output_tokens_mean",
        1.0,
        4,
    ),
];

fn metric(run: &StoredRun, name: &str) -> Option<f64> {
    run.metrics.get(name).copied().flatten()
}

fn shown(v: Option<f64>, scale: f64, decimals: usize) -> String {
    v.filter(|v| v.is_finite()).map_or_else(
        || UNKNOWN.to_string(),
        |v| format!("{:.decimals$}", v * scale),
    )
}

/// The load line of the summary: EvalScope's "Number of concurrency" (or the rate of an
/// open loop), and "Total requests".
fn load_lines(run: &StoredRun) -> Vec<(String, String)> {
    let load = run.axes.get("load").or_else(|| run.settings.get("load"));
    let get = |k: &str| load.and_then(|l| l.get(k)).filter(|v| !v.is_null());
    let mut lines = Vec::new();
    if let Some(c) = get("concurrency") {
        lines.push(("Number of concurrency".to_string(), text(c)));
    }
    if let Some(r) = get("rate") {
        lines.push(("Request rate (req/s)".to_string(), text(r)));
    }
    let cancelled = metric(run, "cancelled_requests").unwrap_or(0.0);
    let total = match (metric(run, "requests_ok"), metric(run, "requests_failed")) {
        (Some(ok), Some(failed)) => format!("{:.0}", ok + failed + cancelled),
        _ => UNKNOWN.to_string(),
    };
    lines.push(("Total requests".to_string(), total));
    lines
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One run's "Benchmarking summary" as a two-column grid.
pub fn summary(run: &StoredRun) -> Grid {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let (first, rest) = SUMMARY.split_at(1);
    for (title, name, scale, decimals) in first {
        rows.push(vec![
            title.to_string(),
            shown(metric(run, name), *scale, *decimals),
        ]);
    }
    rows.extend(load_lines(run).into_iter().map(|(k, v)| vec![k, v]));
    for (title, name, scale, decimals) in rest {
        rows.push(vec![
            title.to_string(),
            shown(metric(run, name), *scale, *decimals),
        ]);
    }
    Grid {
        header: vec!["Key".into(), "Value".into()],
        rows,
        label_cols: 1,
        notes: Vec::new(),
    }
}

/// One run's "Percentile results": a row per percentile, a column per quantity.
pub fn percentiles(run: &StoredRun) -> Grid {
    let mut header = vec!["Percentiles".to_string()];
    header.extend(
        EVALSCOPE_COLUMNS
            .iter()
            .map(|(_, title, _)| title.to_string()),
    );
    let rows = EVALSCOPE_PERCENTILES
        .iter()
        .map(|stat| {
            let mut row = vec![format!("{}%", &stat[1..])];
            row.extend(EVALSCOPE_COLUMNS.iter().map(|(q, _, seconds)| {
                let v = metric(run, &format!("{q}_{stat}"));
                match seconds {
                    true => shown(v, 1e-3, 4),
                    false => shown(v, 1.0, 4),
                }
            }));
            row
        })
        .collect();
    Grid {
        header,
        rows,
        label_cols: 1,
        notes: Vec::new(),
    }
}

/// Every run's heading (`#1 c7a0f108ef1b load=concurrency=8`) with its two grids.
pub fn sections(data: &ReportData) -> Vec<(String, Grid, Grid)> {
    let labels = Labels::new(&data.runs);
    data.runs
        .iter()
        .map(|run| {
            let mut heading = format!("#{} {}", run.ordinal, run.id);
            let label = labels.run(run);
            if !label.is_empty() {
                heading.push(' ');
                heading.push_str(&label);
            }
            (heading, summary(run), percentiles(run))
        })
        .collect()
}

/// The preset as a terminal table: per run, its summary then its percentiles.
pub fn table(data: &ReportData, style: super::TableStyle) -> String {
    let mut out = format!(
        "suite {} — {} runs (EvalScope's summary)\n",
        data.suite.info.plan_name,
        data.runs.len()
    );
    for (heading, summary, pct) in sections(data) {
        out.push_str(&format!("\n{heading}\nBenchmarking summary:\n"));
        out.push_str(&super::table::render_grid(&summary, style));
        out.push_str("Percentile results:\n");
        out.push_str(&super::table::render_grid(&pct, style));
    }
    out.push_str(&super::health::text(data));
    out
}

/// The preset as Markdown.
pub fn markdown(data: &ReportData) -> String {
    let mut out = String::new();
    for (heading, summary, pct) in sections(data) {
        out.push_str(&format!("### {heading}\n\n**Benchmarking summary**\n\n"));
        out.push_str(&super::markdown::render_grid(&summary));
        out.push_str("\n**Percentile results**\n\n");
        out.push_str(&super::markdown::render_grid(&pct));
        out.push('\n');
    }
    out
}
