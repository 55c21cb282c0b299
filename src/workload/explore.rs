//! An exploring load during its run: the engine's level control ([`ExploreControl`],
//! `metrics::explore`'s walk fed the records of each step), which keeps the steps it
//! held for the run's end (`measure::explore`). Knows nothing of HTTP.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::engine::{LevelControl, Levels, Load, RunConfig};
use crate::metrics::explore::{Ending, Explorer, StepTally};
use crate::metrics::steps::StepWindow;
use crate::planner::RunSpec;
use crate::record::{Phase, RequestRecord};

/// The walk of one exploring run, and the steps it held.
#[derive(Debug)]
pub struct ExploreControl {
    explorer: Explorer,
    level: u32,
    start: Duration,
    tally: StepTally,
    held: Vec<StepWindow>,
}

impl ExploreControl {
    /// The steps held so far, each a level and its time span.
    pub fn held(&self) -> &[StepWindow] {
        &self.held
    }

    /// How the walk ended (or stands).
    pub fn outcome(&self) -> Ending {
        self.explorer.outcome()
    }
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
pub(crate) fn measured_config(run: &RunSpec, cfg: RunConfig) -> (RunConfig, Option<Shared>) {
    match engine_load(run) {
        Some((load, shared)) => (RunConfig { load, ..cfg }, Some(shared)),
        None => (cfg, None),
    }
}
