//! An exploring load's hook into the load loop: the slots of a closed loop chosen step
//! by step by a control that sees each record (the suite's; the engine knows no rule).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::record::RequestRecord;

/// Chooses a closed loop's slots from what it measured (an exploring load): told each
/// record as it completes, asked at the end of each step for the next step's slots.
pub trait LevelControl: Send {
    /// A record completed.
    fn observe(&mut self, rec: &RequestRecord);
    /// The step ending at `at` (from the run's start) is over: the next step's slots, or
    /// `None` to end the run.
    fn next(&mut self, at: Duration) -> Option<u32>;
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
