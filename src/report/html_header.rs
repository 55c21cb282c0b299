//! The HTML report's first lines: what the suite measured (endpoints and their URLs,
//! models, datasets, the input and output lengths its runs measured), when, and with
//! which perfplan, read from the runs as stored; then, on a second line, the environment
//! (client machine, servers' own accounts, labels).

use serde_json::Value;

use super::format::number;
use super::svg::escape;
use super::ReportData;
use crate::store::StoredRun;

/// Distinct values, in first-seen order.
fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !v.is_empty() && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn text<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    v.pointer(path).and_then(Value::as_str)
}

/// `name (url)` of a run's endpoint.
fn endpoint(run: &StoredRun) -> String {
    let name = text(&run.settings, "/endpoint/name").unwrap_or_default();
    match text(&run.settings, "/endpoint/base_url") {
        Some(url) if !name.is_empty() => format!("{name} ({url})"),
        Some(url) => url.to_string(),
        None => name.to_string(),
    }
}

/// The name the server knows a run's model by.
fn model(run: &StoredRun) -> String {
    text(&run.settings, "/model/served_name")
        .or_else(|| text(&run.settings, "/model/name"))
        .unwrap_or_default()
        .to_string()
}

/// `a` or `a–b` over the runs that measured `metric`, `—` when none did.
fn range(runs: &[StoredRun], metric: &str) -> String {
    let values: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.metrics.get(metric).copied().flatten())
        .filter(|v| v.is_finite())
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        super::grid::MISSING.to_string()
    } else if (hi - lo).abs() < 0.5 {
        number(lo.round())
    } else {
        format!("{}–{}", number(lo.round()), number(hi.round()))
    }
}

/// The header block.
pub fn header(data: &ReportData) -> String {
    let runs = &data.runs;
    let line = |label: &str, values: Vec<String>| {
        let shown = if values.is_empty() {
            super::grid::MISSING.to_string()
        } else {
            values.join(", ")
        };
        format!("<b>{label}</b> {}", escape(&shown))
    };
    let items = [
        line("endpoint", distinct(runs.iter().map(endpoint))),
        line("model", distinct(runs.iter().map(model))),
        line(
            "dataset",
            distinct(
                runs.iter()
                    .filter_map(|r| text(&r.settings, "/dataset/name").map(str::to_string)),
            ),
        ),
        format!(
            "<b>tokens per request</b> input {} · output {} (measured means)",
            range(runs, "input_tokens_mean"),
            range(runs, "output_tokens_mean")
        ),
        format!(
            "<b>date</b> {}",
            escape(&super::html::utc(data.suite.created_unix_ms))
        ),
        format!(
            "<b>perfplan</b> {}",
            escape(&data.suite.info.perfplan_version)
        ),
    ];
    let environment = super::environment::html_line(data)
        .map(|line| format!("<br><small>{}</small>", escape(&line)))
        .unwrap_or_default();
    format!("<p class=\"header\">{}{environment}</p>", items.join(" · "))
}
