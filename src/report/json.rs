//! The JSON export: an array with one object per run, DESIGN.md's shape
//! `{"id", "ordinal", "status", "verdict", "axes": {axis: value}, "metrics": {name: number|null}}`
//! (`verdict`: `{"status": "valid"|"suspect"|"invalid"|"not_judged", "reasons": [{"code",
//! "severity", "accepted", "text"}]}`)
//! (every metric name of the vocabulary present, null when unknown, in vocabulary order)
//! followed by the run's health and verdicts: `failed_requests` (number|null),
//! `failures` ({class: count}, HTTP split by status), `client_bound` (reason|null),
//! `warnings` ([text]), `error` (text|null) and `gates` ([{gate, condition, passed,
//! value, baseline, message}], the verdicts of this report on this run); a ramped run
//! adds `steps` ([{rate or concurrency, start_s, end_s, metrics}], `report::ramp_steps`);
//! `environment` is what the run measured on (`{client, labels, endpoint}`, the suite's
//! environment with the run's own endpoint; null for suites stored before it was kept).

use serde_json::{json, Map, Value};

use super::gates::GateOutcome;
use super::health::RunHealth;
use super::{ReportData, ReportError};
use crate::metrics::names;
use crate::store::StoredRun;

fn number(v: Option<f64>) -> Value {
    v.filter(|v| v.is_finite()).map_or(Value::Null, Value::from)
}

/// A metric's value: a count (`MetricUnit::Count`) that is whole as an integer
/// (`"requests_ok": 48`), any other as a number.
fn metric_value(name: &str, v: Option<f64>) -> Value {
    let whole = v.filter(|v| v.fract() == 0.0 && v.abs() < 9.0e15);
    match (crate::metrics::registry::unit_of(name), whole) {
        (Some(crate::metrics::registry::MetricUnit::Count), Some(n)) => Value::from(n as i64),
        _ => number(v),
    }
}

/// One run as a JSON object, with the verdicts of `gates` on it.
pub(crate) fn run_object(run: &StoredRun, gates: &[GateOutcome]) -> Value {
    let metrics: Map<String, Value> = names::all_names()
        .into_iter()
        .map(|name| {
            let v = metric_value(&name, run.metrics.get(&name).copied().flatten());
            (name, v)
        })
        .collect();
    let health = RunHealth::of(run);
    let verdicts: Vec<Value> = gates
        .iter()
        .filter(|g| g.run_id == run.id)
        .map(|g| {
            json!({
                "gate": g.condition.metric,
                "condition": g.condition.text,
                "passed": g.passed,
                "value": number(g.value),
                "baseline": number(g.baseline),
                "message": g.message,
            })
        })
        .collect();
    let mut obj = Map::new();
    obj.insert("id".into(), Value::from(run.id.clone()));
    obj.insert("ordinal".into(), Value::from(run.ordinal));
    obj.insert("status".into(), Value::from(run.status.as_str()));
    obj.insert("verdict".into(), super::verdicts::json(run));
    obj.insert("axes".into(), run.axes.clone());
    obj.insert("metrics".into(), Value::Object(metrics));
    obj.insert("failed_requests".into(), json!(health.failed));
    obj.insert("failures".into(), json!(health.failures));
    obj.insert("client_bound".into(), json!(health.client_bound));
    let warnings: Vec<String> = run.warnings.iter().map(ToString::to_string).collect();
    obj.insert("warnings".into(), json!(warnings));
    obj.insert("error".into(), json!(run.error));
    obj.insert("gates".into(), Value::Array(verdicts));
    if let Some(steps) = super::ramp_steps::steps_of(run) {
        obj.insert("steps".into(), json!(steps));
    }
    if let Some(classes) = super::classes::json_of(run) {
        obj.insert("classes".into(), classes);
    }
    if let Some(r) = super::repeats::repeat_of(run) {
        obj.insert(
            "repeat".into(),
            json!({"group": r.group, "k": r.k, "of": r.of}),
        );
    }
    Value::Object(obj)
}

/// Every run of the suite, by ordinal, pretty-printed.
pub fn render(data: &ReportData, gates: &[GateOutcome]) -> Result<String, ReportError> {
    let env = data.suite.info.environment.as_ref();
    let runs: Vec<Value> = data
        .runs
        .iter()
        .map(|r| {
            let mut obj = run_object(r, gates);
            if let Some(map) = obj.as_object_mut() {
                map.insert("environment".into(), super::environment::json_of(env, r));
                map.insert("clock".into(), Value::from(data.clock.as_str()));
            }
            obj
        })
        .collect();
    let mut out = serde_json::to_string_pretty(&runs).map_err(ReportError::Json)?;
    out.push('\n');
    Ok(out)
}
