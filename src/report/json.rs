//! The JSON export, exactly DESIGN.md's shape: an array with one object per run,
//! `{"id", "ordinal", "status", "axes": {axis: value}, "metrics": {name: number|null}}`,
//! every metric name of the vocabulary present (null when unknown), in vocabulary order.

use serde_json::{Map, Value};

use super::{ReportData, ReportError};
use crate::metrics::names;
use crate::store::StoredRun;

/// One run as a JSON object.
pub fn run_object(run: &StoredRun) -> Value {
    let metrics: Map<String, Value> = names::all_names()
        .into_iter()
        .map(|name| {
            let v = run
                .metrics
                .get(&name)
                .copied()
                .flatten()
                .filter(|v| v.is_finite())
                .map_or(Value::Null, Value::from);
            (name, v)
        })
        .collect();
    let mut obj = Map::new();
    obj.insert("id".into(), Value::from(run.id.clone()));
    obj.insert("ordinal".into(), Value::from(run.ordinal));
    obj.insert("status".into(), Value::from(run.status.as_str()));
    obj.insert("axes".into(), run.axes.clone());
    obj.insert("metrics".into(), Value::Object(metrics));
    Value::Object(obj)
}

/// Every run of the suite, by ordinal, pretty-printed.
pub fn render(data: &ReportData) -> Result<String, ReportError> {
    let runs: Vec<Value> = data.runs.iter().map(run_object).collect();
    let mut out = serde_json::to_string_pretty(&runs).map_err(ReportError::Json)?;
    out.push('\n');
    Ok(out)
}
