//! An exploring load during its run: the engine's level control ([`ExploreControl`],
//! `metrics::explore`'s walk fed the records of each step), which keeps the steps it
//! held for the run's end (`measure::explore`). A level is a closed loop's requests in
//! flight, or (`by = "rate"`) an open loop's arrivals per second, seeded and spaced as
//! every open loop's (`arrivals`, `burstiness`); a step ends after its duration or once its count of requests ended. Knows
//! nothing of HTTP.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::engine::{LevelControl, Levels, Load, RunConfig};
use crate::metrics::explore::{queue_rises, Ending, Explorer, StepTally};
use crate::metrics::steps::StepWindow;
use crate::planner::RunSpec;
use crate::record::{Phase, RequestRecord};
use crate::telemetry::queue::QueueGauge;

/// The walk of one exploring run, and the steps it held.
#[derive(Debug)]
pub struct ExploreControl {
    explorer: Explorer,
    /// In the rule's units.
    level: u32,
    start: Duration,
    tally: StepTally,
    held: Vec<StepWindow>,
    /// An open loop's rate grows (its throughput is what ended in the step over its
    /// length), not a closed loop's slots.
    by_rate: bool,
    /// A step ends once this many requests ended in it.
    step_requests: Option<u32>,
    /// The server's queue as the sampler reads it (`server_queue = true`), and when the
    /// step began on the clock it is read by.
    queue: Option<QueueGauge>,
    began: Instant,
}

impl ExploreControl {
    /// The steps held so far, each a level and its time span.
    pub fn held(&self) -> &[StepWindow] {
        &self.held
    }

    /// How the walk ended (or stands); its levels in the rule's units.
    pub fn outcome(&self) -> Ending {
        self.explorer.outcome()
    }

    /// A level in the rule's units as requests in flight or req/s.
    pub fn value(&self, units: u32) -> f64 {
        self.explorer.value(units)
    }

    /// Whether the level is an open loop's rate (req/s) rather than requests in flight.
    pub(crate) fn by_rate(&self) -> bool {
        self.by_rate
    }
}

impl LevelControl for ExploreControl {
    fn observe(&mut self, rec: &RequestRecord) -> bool {
        // One that ended before the step began (seen late) belongs to a step judged.
        if rec.phase == Phase::Measured && rec.end >= self.start {
            self.tally.add(rec, self.start);
        }
        self.step_requests
            .is_some_and(|n| self.tally.ended() >= u64::from(n))
    }

    fn begin(&mut self, at: Duration) {
        self.tally = StepTally::default();
        self.start = at;
        self.began = Instant::now();
    }

    fn next(&mut self, at: Duration) -> Option<f64> {
        let mut figures = if self.by_rate {
            self.tally
                .take_open(self.level, at.saturating_sub(self.start))
        } else {
            self.tally.take(self.level)
        };
        if let Some(q) = &self.queue {
            figures.queue_rises = queue_rises(&q.since(self.began));
        }
        self.began = Instant::now();
        self.held.push(StepWindow {
            rate: self.explorer.value(self.level),
            start: self.start,
            end: at,
        });
        self.start = at;
        let next = self.explorer.next(figures)?;
        self.level = next;
        Some(self.explorer.value(next))
    }
}

/// An exploring run's control, shared with the engine.
pub(crate) type Shared = Arc<Mutex<ExploreControl>>;

/// The engine's load of an exploring run with a fresh control, and that control.
pub fn engine_load(run: &RunSpec) -> Option<(Load, Shared)> {
    let crate::planner::Load::Explore(terms) = run.load.mode else {
        return None;
    };
    let rule = terms.rule;
    let explorer = Explorer::new(rule);
    let first = explorer.first_level();
    let shared = Arc::new(Mutex::new(ExploreControl {
        explorer,
        level: first,
        start: Duration::ZERO,
        tally: StepTally::default(),
        held: Vec::new(),
        by_rate: terms.by_rate,
        step_requests: terms.step.requests(),
        queue: terms.server_queue.then(QueueGauge::default),
        began: Instant::now(),
    }));
    let load = Load::Explore {
        first: rule.value(first),
        most: rule.value(rule.max.max(first)),
        step: terms.step.length(),
        open: terms
            .by_rate
            .then(|| (super::run_terms::arrivals(terms.arrivals), run.dataset_seed)),
        control: Levels(shared.clone()),
    };
    Some((load, shared))
}

/// A run's settings: an exploring run's with the control kept to read its steps at the
/// end (a warm run's priming pass explores with another), and the server's queue that
/// control reads (`server_queue = true`), for the run's sampler to tell.
pub(crate) fn measured_config(
    run: &RunSpec,
    cfg: RunConfig,
) -> (RunConfig, Option<Shared>, Option<QueueGauge>) {
    match engine_load(run) {
        Some((load, shared)) => {
            let queue = shared.lock().ok().and_then(|c| c.queue.clone());
            (RunConfig { load, ..cfg }, Some(shared), queue)
        }
        None => (cfg, None, None),
    }
}
