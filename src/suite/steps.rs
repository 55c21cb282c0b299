//! A ramped run's per-step metrics, at its end: the steps of its rate curve
//! (`planner::RateCurve::steps`) or concurrency curve
//! (`planner::concurrency_ramp::concurrency_steps`), then one streaming pass over the
//! stored rows to fold them (`metrics::steps`; flat memory, whatever the run's size). They
//! go to the run's extras as `time.steps`: `[{"rate", "start_s", "end_s", "metrics":
//! {...}}]` (`"concurrency"` instead of `"rate"` for a concurrency ramp), where the report
//! reads them. A run without a ramp, or a linear or exponential ramp without `steps`, has
//! none.

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::metrics::steps::{StepFold, StepWindow};
use crate::metrics::MetricDefinitions;
use crate::planner::concurrency_ramp::concurrency_steps;
use crate::planner::RunSpec;
use crate::store::Store;

/// Adds `steps` to the run's time facts; a warning when the rows could not be read.
pub(super) fn measure(
    store: &Arc<Mutex<Store>>,
    run: &RunSpec,
    definitions: MetricDefinitions,
    time: &mut Value,
) -> Option<String> {
    let (steps, key) = match (run.ramp(), run.concurrency_ramp()) {
        (Some(rate), _) => (rate.steps(), "rate"),
        (None, Some(c)) => (concurrency_steps(&c), "concurrency"),
        (None, None) => return None,
    };
    let windows: Vec<StepWindow> = steps
        .into_iter()
        .map(|s| StepWindow {
            rate: s.rate,
            start: s.start,
            end: s.end,
        })
        .collect();
    if windows.is_empty() {
        return None;
    }
    let mut fold = StepFold::new(&windows, definitions);
    let read = match store.lock() {
        Ok(store) => store.each_request_row(&run.id, |row| fold.add(&row.record)),
        Err(_) => return Some("no per-step metrics: the store is poisoned".into()),
    };
    if let Err(e) = read {
        return Some(format!(
            "no per-step metrics: {}",
            crate::control::chain(&e)
        ));
    }
    let steps: Vec<Value> = fold
        .finish()
        .into_iter()
        .map(|s| {
            let metrics: Map<String, Value> = s
                .values
                .into_iter()
                .map(|(name, v)| {
                    let value = match v {
                        // Counts are integers in JSON.
                        Some(x) if name.starts_with("requests_") => json!(x as u64),
                        Some(x) => json!(x),
                        None => Value::Null,
                    };
                    (name, value)
                })
                .collect();
            let mut step = Map::new();
            step.insert(key.into(), json!(s.window.rate));
            step.insert("start_s".into(), json!(s.window.start.as_secs_f64()));
            step.insert("end_s".into(), json!(s.window.end.as_secs_f64()));
            step.insert("metrics".into(), Value::Object(metrics));
            Value::Object(step)
        })
        .collect();
    time["steps"] = Value::from(steps);
    None
}
