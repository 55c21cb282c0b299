//! The limit search of an SLA search, without I/O: exponential bracketing from `min`,
//! then bisection of the bracket until it is narrower than the precision. The terms it
//! works in (bounds, precision, outcome, conditions) are `metrics::sla`'s, shared with
//! the planner and the gates.

use crate::metrics::sla::{Bounds, SearchOutcome};

/// The result of a finished search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SearchResult {
    /// The highest value that met every condition.
    pub best_pass: Option<f64>,
    /// The lowest value that failed a condition.
    pub first_fail: Option<f64>,
    pub outcome: SearchOutcome,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Probe(f64),
    Done(SearchResult),
}

/// Exponential bracketing from `min` (doubling, capped at `max`), then bisection of
/// the bracket until it is narrower than the precision.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    bounds: Bounds,
    best_pass: Option<f64>,
    first_fail: Option<f64>,
    /// Every probe so far: value and whether it passed.
    pub steps: Vec<(f64, bool)>,
}

impl Search {
    pub fn new(bounds: Bounds) -> Search {
        Search {
            bounds,
            best_pass: None,
            first_fail: None,
            steps: Vec::new(),
        }
    }

    fn round(&self, v: f64) -> f64 {
        if self.bounds.integer {
            v.floor()
        } else {
            v
        }
    }

    /// The next value to probe, or the result.
    pub fn next(&self) -> Next {
        let b = &self.bounds;
        let done = |outcome| {
            Next::Done(SearchResult {
                best_pass: self.best_pass,
                first_fail: self.first_fail,
                outcome,
            })
        };
        match (self.best_pass, self.first_fail) {
            (None, None) => Next::Probe(self.round(b.min)),
            (None, Some(_)) => done(SearchOutcome::MinFails),
            (Some(pass), None) if pass >= b.max => done(SearchOutcome::MaxPasses),
            (Some(pass), None) => Next::Probe(self.round((pass * 2.0).min(b.max))),
            (Some(pass), Some(fail)) => {
                if fail - pass <= b.tolerance(pass) {
                    return done(SearchOutcome::Found);
                }
                let mid = self.round((pass + fail) / 2.0);
                if mid <= pass || mid >= fail {
                    return done(SearchOutcome::Found);
                }
                Next::Probe(mid)
            }
        }
    }

    /// Records a probe's verdict.
    pub fn record(&mut self, value: f64, passed: bool) {
        self.steps.push((value, passed));
        if passed {
            if self.best_pass.is_none_or(|p| value > p) {
                self.best_pass = Some(value);
            }
        } else if self.first_fail.is_none_or(|f| value < f) {
            self.first_fail = Some(value);
        }
    }
}

#[cfg(test)]
mod tests;
