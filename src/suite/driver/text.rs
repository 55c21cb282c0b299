//! What a suite prints about its runs: the label of a run in progress lines and the line
//! that sums a finished run up. Pure text; knows nothing of the store or the engine.

use crate::planner::{display_value, RunSpec};

/// The label of a run in progress lines: its varying axes.
pub fn run_label(run: &RunSpec, total: usize) -> String {
    let axes: Vec<String> = run
        .axes
        .iter()
        .map(|(k, v)| format!("{k}={}", display_value(v)))
        .collect();
    // With `--only`, ordinals can exceed the number of selected runs: show the ordinal alone.
    let position = if run.ordinal <= total {
        format!("{}/{total}", run.ordinal)
    } else {
        format!("#{}", run.ordinal)
    };
    format!("run {position} {} {}", run.id, axes.join(" "))
}

pub(super) fn summary_line(run: &RunSpec, total: usize, s: &crate::metrics::RunSummary) -> String {
    let get = |k: &str| s.values.get(k).copied().flatten();
    let ok = get("requests_ok").unwrap_or(0.0);
    let failed = get("requests_failed").unwrap_or(0.0);
    let fmt = |v: Option<f64>, unit: &str| v.map_or("—".to_string(), |x| format!("{x:.1}{unit}"));
    let cancelled = match get("cancelled_requests").unwrap_or(0.0) {
        n if n > 0.0 => format!(", {n:.0} cancelled"),
        _ => String::new(),
    };
    format!(
        "{}: {ok:.0} ok, {failed:.0} failed{cancelled}, {} req/s, ttft p50 {}, tpot mean {}",
        run_label(run, total),
        fmt(get("rps"), ""),
        fmt(get("ttft_p50"), "ms"),
        fmt(get("tpot_mean"), "ms")
    )
}
