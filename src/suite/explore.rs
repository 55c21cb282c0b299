//! An exploring load during and after its run: the engine's level control
//! ([`ExploreControl`], `metrics::explore`'s walk fed the records of each step), and at
//! the run's end the steps it held folded from the stored rows as a ramp's are
//! (`time.steps`, `"concurrency"` for each level), its ending (`time.explore`), and the
//! knee and saturation point as the run's metrics. Knows nothing of HTTP.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::engine::{LevelControl, Levels, Load, RunConfig};
use crate::metrics::explore::{knee, Explorer, StepTally, StoredStep, EXPLORE_NAMES};
use crate::metrics::steps::{StepFold, StepWindow};
use crate::metrics::{MetricDefinitions, RunSummary};
use crate::planner::RunSpec;
use crate::record::{Phase, RequestRecord};
use crate::store::Store;

/// The walk of one exploring run, and the steps it held.
#[derive(Debug)]
pub struct ExploreControl {
    explorer: Explorer,
    level: u32,
    start: Duration,
    tally: StepTally,
    held: Vec<StepWindow>,
}

impl LevelControl for ExploreControl {
    fn observe(&mut self, rec: &RequestRecord) {
        if rec.phase == Phase::Measured {
            self.tally.add(rec, self.start);
        }
    }

    fn next(&mut self, at: Duration) -> Option<u32> {
        let figures = self.tally.take(self.level);
        self.held.push(StepWindow {
            rate: f64::from(self.level),
            start: self.start,
            end: at,
        });
        self.start = at;
        let next = self.explorer.next(figures);
        if let Some(level) = next {
            self.level = level;
        }
        next
    }
}

/// An exploring run's control, shared with the engine.
pub type Shared = Arc<Mutex<ExploreControl>>;

/// The engine's load of an exploring run with a fresh control, and that control.
pub fn engine_load(run: &RunSpec) -> Option<(Load, Shared)> {
    let (rule, step) = run.explore()?;
    let explorer = Explorer::new(rule);
    let first = explorer.first_level();
    let shared = Arc::new(Mutex::new(ExploreControl {
        explorer,
        level: first,
        start: Duration::ZERO,
        tally: StepTally::default(),
        held: Vec::new(),
    }));
    let load = Load::ClosedExplore {
        first,
        most: rule.max.max(first),
        step,
        control: Levels(shared.clone()),
    };
    Some((load, shared))
}

/// A run's settings: an exploring run's with the control kept to read its steps at the
/// end (a warm run's priming pass explores with another).
pub(super) fn measured_config(run: &RunSpec, cfg: RunConfig) -> (RunConfig, Option<Shared>) {
    match engine_load(run) {
        Some((load, shared)) => (RunConfig { load, ..cfg }, Some(shared)),
        None => (cfg, None),
    }
}

/// The explore metrics of every run (null but for an exploring one), and an exploring
/// run's steps and ending in its time facts; a warning when the rows could not be read.
pub(super) fn finish(
    store: &Arc<Mutex<Store>>,
    run: &RunSpec,
    shared: Option<&Shared>,
    definitions: MetricDefinitions,
    (time, summary): (&mut Value, &mut RunSummary),
) -> Option<String> {
    for name in EXPLORE_NAMES {
        summary.values.insert(name.into(), None);
    }
    let control = shared?.lock().ok()?;
    let mut fold = StepFold::new(&control.held, definitions);
    let read = match store.lock() {
        Ok(store) => store.each_request_row(&run.id, |row| fold.add(&row.record)),
        Err(_) => return Some("no exploring steps: the store is poisoned".into()),
    };
    if let Err(e) = read {
        return Some(format!("no exploring steps: {}", crate::control::chain(&e)));
    }
    let steps = crate::metrics::steps::steps_json(fold, "concurrency");
    let stored: Vec<StoredStep> = steps
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|s| StoredStep {
            level: s["concurrency"].as_f64().unwrap_or(0.0),
            output_tps: s["metrics"]["output_tps"].as_f64(),
            latency_p50: s["metrics"]["latency_p50"].as_f64(),
        })
        .collect();
    let ending = control.explorer.outcome();
    let values = &mut summary.values;
    if let Some(k) = knee(&stored) {
        values.insert("knee_concurrency".into(), Some(k.level));
        values.insert("knee_output_tps".into(), k.output_tps);
    }
    if let Some(level) = ending.saturation {
        let at = stored.iter().find(|s| s.level == f64::from(level));
        values.insert("saturation_concurrency".into(), Some(f64::from(level)));
        values.insert(
            "saturation_output_tps".into(),
            at.and_then(|s| s.output_tps),
        );
    }
    time["steps"] = steps;
    time["explore"] = json!({
        "saturation_concurrency": ending.saturation,
        "reason": ending.reason.map_or("max reached still gaining throughput", |r| r.as_str()),
    });
    None
}
