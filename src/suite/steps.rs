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
use crate::plan::LoadSpec;
use crate::planner::concurrency_ramp::concurrency_steps;
use crate::planner::{RateCurve, RunSpec};
use crate::store::Store;

/// The step windows of a load with a ramp, and the key each step's level goes under
/// (`rate` or `concurrency`); `None` for any other load, or a curve without steps.
pub fn windows_of(load: &LoadSpec) -> Option<(Vec<StepWindow>, &'static str)> {
    let rate = load.ramp.as_ref().and_then(RateCurve::of);
    let concurrency = load
        .concurrency_ramp
        .as_ref()
        .and_then(crate::planner::concurrency_ramp::curve_of);
    let (steps, key) = match (rate, concurrency) {
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
    (!windows.is_empty()).then_some((windows, key))
}

/// Adds `steps` to the run's time facts; a warning when the rows could not be read.
pub(super) fn measure(
    store: &Arc<Mutex<Store>>,
    run: &RunSpec,
    definitions: MetricDefinitions,
    time: &mut Value,
) -> Option<String> {
    let (windows, key) = windows_of(&run.settings.load)?;
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
    time["steps"] = steps_json(fold, key);
    None
}

/// The folded steps as `time.steps` keeps them.
pub fn steps_json(fold: StepFold, key: &str) -> Value {
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
    Value::from(steps)
}
