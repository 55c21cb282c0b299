//! A ramped run's per-step metrics, at its end: the steps of its rate curve
//! (`planner::RateCurve::steps`) or concurrency curve
//! (`planner::concurrency_ramp::concurrency_steps`), then one streaming pass over the
//! stored rows to fold them (`metrics::steps`; flat memory, whatever the run's size). They
//! go to the run's facts as `time.steps`: `[{"rate", "start_s", "end_s", "metrics":
//! {...}}]` (`"concurrency"` instead of `"rate"` for a concurrency ramp), where the report
//! reads them. A run without a ramp, or a linear or exponential ramp without `steps`, has
//! none.

use std::sync::{Arc, Mutex};

use crate::metrics::steps::{step_facts, StepFold};
use crate::metrics::MetricDefinitions;
use crate::planner::RunSpec;
use crate::record::facts::TimeFacts;
use crate::store::Store;

/// Adds `steps` to the run's time facts; a warning when the rows could not be read.
pub(crate) fn measure(
    store: &Arc<Mutex<Store>>,
    run: &RunSpec,
    definitions: MetricDefinitions,
    time: &mut TimeFacts,
) -> Option<String> {
    let (windows, key) = run.load.step_windows()?;
    let hardware = crate::planner::hardware_of(&run.settings);
    let mut fold = StepFold::new(&windows, definitions, hardware);
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
    time.steps = Some(step_facts(fold, key));
    None
}
