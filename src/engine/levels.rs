//! An exploring load's hook into the load loop: the slots of a closed loop (or an open
//! loop's rate) chosen step by step by a control that sees each record (the workload's;
//! the engine knows no rule).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::record::RequestRecord;

/// Chooses a closed loop's slots (or an open loop's rate) from what it measured (an
/// exploring load): told each record as it completes, asked at the end of each step for
/// the next step's level.
pub trait LevelControl: Send {
    /// A record completed; `true` when it ends the step (a step of a count of requests).
    fn observe(&mut self, rec: &RequestRecord) -> bool;
    /// The next step begins at `at`, later than the last one ended (an open loop's level
    /// fell and the requests in flight were let finish first): what ended before is in
    /// no step.
    fn begin(&mut self, at: Duration) {
        let _ = at;
    }
    /// The step ending at `at` (from the run's start) is over: the next step's slots (a
    /// whole number) or req/s, or `None` to end the run.
    fn next(&mut self, at: Duration) -> Option<f64>;
}

/// A shared [`LevelControl`]: the caller keeps its own handle to read what it decided.
#[derive(Clone)]
pub struct Levels(pub Arc<Mutex<dyn LevelControl>>);

impl std::fmt::Debug for Levels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Levels(..)")
    }
}

impl PartialEq for Levels {
    fn eq(&self, other: &Levels) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// An exploring load in the load loop: its control, its current level and when its step
/// ends. An open loop whose level falls drains first: no arrival is sent until the
/// requests in flight have ended (a queue left by a higher rate would otherwise be judged
/// as the lower rate's), and its step begins then.
#[derive(Debug, Clone)]
pub(crate) struct Exploring {
    pub control: Levels,
    /// The end of the current step (none for a step of a count of requests, or while
    /// draining).
    pub due: Option<Duration>,
    /// Each step's length (none: a count of requests ends it).
    pub step: Option<Duration>,
    pub level: f64,
    pub draining: bool,
}

impl Exploring {
    pub(crate) fn new(control: Levels, step: Option<Duration>, first: f64) -> Exploring {
        Exploring {
            control,
            due: step,
            step,
            level: first,
            draining: false,
        }
    }

    /// The next step begins at `at` (drained).
    pub(crate) fn begin(&mut self, at: Duration) {
        if let Ok(mut c) = self.control.0.lock() {
            c.begin(at);
        }
        self.draining = false;
        self.due = self.step.map(|s| at + s);
    }

    /// `level` holds from `at`; an open loop drains first when it fell.
    pub(crate) fn hold(&mut self, at: Duration, level: f64, open: bool) {
        self.draining = open && level < self.level;
        self.level = level;
        self.due = match self.draining {
            true => None,
            false => self.step.map(|s| at + s),
        };
    }
}
