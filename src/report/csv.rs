//! The CSV export (RFC 4180), one row per run, by ordinal. Columns, in this order:
//! `id`, `ordinal`, `status`; then one column per axis of the suite (named as the
//! axis, in order of first appearance; a table value such as `load` is written as
//! compact JSON); then every metric name of the vocabulary, in vocabulary order.
//! Numbers are written in their shortest exact form; an unknown value is empty.

use serde_json::Value;

use super::pivot::axis_names;
use super::ReportData;
use crate::metrics::names;

fn quote(field: &str) -> String {
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

/// The suite's runs as CSV.
pub fn render(data: &ReportData) -> String {
    let axes = axis_names(&data.runs);
    let metrics = names::all_names();
    let mut header: Vec<String> = vec!["id".into(), "ordinal".into(), "status".into()];
    header.extend(axes.iter().cloned());
    header.extend(metrics.iter().cloned());
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
        ];
        fields.extend(axes.iter().map(|a| axis_field(run.axes.get(a))));
        fields.extend(metrics.iter().map(|m| {
            run.metrics
                .get(m)
                .copied()
                .flatten()
                .filter(|v| v.is_finite())
                .map_or_else(String::new, |v| v.to_string())
        }));
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
