//! The CSV export (RFC 4180), one row per run, by ordinal. Columns, in this order:
//! `id`, `ordinal`, `status`, `verdict` (`valid`, `suspect`, `invalid`, `not_judged`),
//! `verdict_reasons` (the codes of the reasons that weigh, `;`-joined); then one column per axis of the suite (named as the
//! axis, in order of first appearance; a table value such as `load` is written as
//! compact JSON, kept for the readers of earlier exports); then the run's load in
//! columns of their own, `concurrency`, `rate` (req/s), `requests` and `duration` (the
//! load's duration limit in seconds), empty where the load has none; then every metric
//! name of the vocabulary, in vocabulary order; then the
//! run's health: `failed_requests`, `failure_classes` (`http_500=8 stream_broken=4`),
//! `client_bound` (the reason, empty when not) and `warnings_count`.
//! Numbers are written in their shortest exact form; an unknown value is empty.

use serde_json::Value;

use super::health::RunHealth;
use super::pivot::axis_names;
use super::ReportData;
use crate::metrics::names;
use crate::store::StoredRun;

/// A number as a CSV cell: empty when unknown or not finite.
pub(crate) fn cell(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(String::new, |v| v.to_string())
}

/// The metrics of a breakdown's rows (`--by-replica`, `--by-class`): those `--metrics`
/// gave, else `defaults`; a name outside the vocabulary is an error naming `flag`.
pub(crate) fn breakdown_metrics(
    flag: &str,
    given: &[String],
    defaults: &[&str],
) -> Result<Vec<String>, super::ReportError> {
    let metrics: Vec<String> = match given.is_empty() {
        true => defaults.iter().map(|m| m.to_string()).collect(),
        false => given.to_vec(),
    };
    if let Some(bad) = metrics.iter().find(|m| !names::is_metric(m)) {
        return Err(super::ReportError::Format(format!(
            "{flag}: `{bad}` is not a metric name (see `perfplan report --help`)"
        )));
    }
    Ok(metrics)
}

pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

fn axis_field(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The load's own columns, after the axes.
const LOAD_COLUMNS: [&str; 4] = ["concurrency", "rate", "requests", "duration"];

/// A run's load as the load columns: each key from its resolved settings, else from its
/// `load` axis.
fn load_fields(run: &StoredRun) -> [String; 4] {
    let get = |k: &str| {
        [run.settings.get("load"), run.axes.get("load")]
            .into_iter()
            .flatten()
            .find_map(|l| l.get(k).filter(|v| !v.is_null()))
    };
    let number = |k: &str| match get(k) {
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let duration = match get("duration") {
        Some(Value::String(text)) => crate::units::parse_duration(text)
            .map(|d| d.as_secs_f64().to_string())
            .unwrap_or_default(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    [
        number("concurrency"),
        number("rate"),
        number("requests"),
        duration,
    ]
}

/// The health columns, after the metrics.
const HEALTH_COLUMNS: [&str; 4] = [
    "failed_requests",
    "failure_classes",
    "client_bound",
    "warnings_count",
];

fn health_fields(run: &StoredRun) -> [String; 4] {
    let health = RunHealth::of(run);
    [
        health.failed.map_or_else(String::new, |n| n.to_string()),
        health
            .failures
            .iter()
            .map(|(class, n)| format!("{class}={n}"))
            .collect::<Vec<_>>()
            .join(" "),
        health.client_bound.unwrap_or_default(),
        run.warnings.len().to_string(),
    ]
}

/// The suite's runs as CSV.
pub fn render(data: &ReportData) -> String {
    let axes = axis_names(&data.runs);
    let metrics = names::all_names();
    let mut header: Vec<String> = ["id", "ordinal", "status", "verdict", "verdict_reasons"]
        .map(String::from)
        .to_vec();
    header.extend(axes.iter().cloned());
    header.extend(LOAD_COLUMNS.map(String::from));
    header.extend(metrics.iter().cloned());
    header.extend(HEALTH_COLUMNS.map(String::from));
    // On the user clock (`--clock user`) a last column says so on every row, so a file
    // cannot pass for the kernel clock's; on the kernel's, the columns stay as they were.
    let user_clock = data.clock == crate::record::Clock::User;
    if user_clock {
        header.push("clock".into());
    }
    let mut out = header
        .iter()
        .map(|h| quote(h))
        .collect::<Vec<_>>()
        .join(",");
    out.push_str("\r\n");
    for run in &data.runs {
        let mut fields = vec![
            run.id.clone(),
            run.ordinal.to_string(),
            run.status.as_str().to_string(),
            run.verdict.status.as_str().to_string(),
            super::verdicts::codes(run),
        ];
        fields.extend(axes.iter().map(|a| axis_field(run.axes.get(a))));
        fields.extend(load_fields(run));
        fields.extend(metrics.iter().map(|m| {
            run.metrics
                .get(m)
                .copied()
                .flatten()
                .filter(|v| v.is_finite())
                .map_or_else(String::new, |v| v.to_string())
        }));
        fields.extend(health_fields(run));
        if user_clock {
            fields.push(data.clock.as_str().into());
        }
        out.push_str(
            &fields
                .iter()
                .map(|f| quote(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push_str("\r\n");
    }
    out
}
