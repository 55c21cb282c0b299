//! A run's steady-state metrics, at its end: the window the tally found while the rows
//! were written (`metrics::steady`), then one streaming pass over the stored rows to fold
//! the requests inside it (flat memory, whatever the run's size). The metrics join the
//! run's summary; the window and the slice width go to its facts (`time`), where the
//! report's slices read them; a run without a window says why (`time.steady_missing`), and
//! one of ten slices or more also warns. A ramped run's per-step metrics join them
//! (`measure::steps`, `time.steps`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::metrics::steady::{unknown, SteadyFold, WindowFinder};
use crate::metrics::{MetricDefinitions, RunSummary};
use crate::record::facts::{SteadyWindow, TimeFacts};
use crate::store::Store;

/// A run at least this many slices long without a steady window is warned about.
const LONG_RUN_SLICES: f64 = 10.0;

/// The run's time facts (`slice_s`, `steady`: its window or `null`, seconds on the
/// records' time base), and the warning of a run without a
/// window (or of per-step metrics that could not be read). Writes the `*_steady`
/// metrics into `summary` (null without a window).
pub(crate) fn measure(
    store: &Arc<Mutex<Store>>,
    run: &crate::planner::RunSpec,
    (finder, slice): (&WindowFinder, Duration),
    definitions: MetricDefinitions,
    summary: &mut RunSummary,
) -> (TimeFacts, Option<String>) {
    let (mut time, warning) = window_metrics(store, &run.id, (finder, slice), definitions, summary);
    let steps = super::steps::measure(store, run, definitions, &mut time);
    (time, warning.or(steps))
}

fn window_metrics(
    store: &Arc<Mutex<Store>>,
    run_id: &str,
    (finder, slice): (&WindowFinder, Duration),
    definitions: MetricDefinitions,
    summary: &mut RunSummary,
) -> (TimeFacts, Option<String>) {
    summary.values.extend(unknown());
    let mut time = TimeFacts {
        slice_s: Some(slice.as_secs_f64()),
        steady: Some(None),
        ..TimeFacts::default()
    };
    let window = match finder.finish(slice) {
        Ok(w) => w,
        // A run that measured nothing has other warnings to give.
        Err(_) if summary.requests == 0 => return (time, None),
        Err(why) => {
            // A short run (a smoke test) has no steady state by nature: said in its
            // facts, not warned about; a run of many slices without one is worth a word.
            let long = summary
                .values
                .get("duration_s")
                .copied()
                .flatten()
                .is_some_and(|d| d >= LONG_RUN_SLICES * slice.as_secs_f64())
                && finder.can_be_steady();
            time.steady_missing = Some(why.clone());
            return (
                time,
                long.then(|| format!("no steady-state metrics: {why}")),
            );
        }
    };
    let mut fold = SteadyFold::new(window, definitions);
    let read = match store.lock() {
        Ok(store) => store.each_request_row(run_id, |row| fold.add(&row.record)),
        Err(_) => {
            return (
                time,
                Some("no steady-state metrics: the store is poisoned".into()),
            )
        }
    };
    if let Err(e) = read {
        let why = crate::control::chain(&e);
        return (time, Some(format!("no steady-state metrics: {why}")));
    }
    summary.values.extend(fold.finish());
    time.steady = Some(Some(SteadyWindow {
        start_s: window.start.as_secs_f64(),
        end_s: window.end.as_secs_f64(),
    }));
    (time, None)
}
