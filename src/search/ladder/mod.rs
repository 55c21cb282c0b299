//! The objective search of an SLA search, without I/O: a doubling ladder from `min` until
//! a probe fails a condition (or `max` is probed), then midpoints around the best passing
//! value until no neighbour is farther than the precision. Its objective is
//! `metrics::sla::objective`'s.

use crate::metrics::sla::{Bounds, Goal, SearchOutcome};

/// Probes a search never exceeds, whatever the precision.
const MAX_PROBES: usize = 64;

/// One probe: its value, whether it met every condition, and its objective value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub value: f64,
    pub passed: bool,
    pub score: Option<f64>,
}

/// The result of a finished objective search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OptimumResult {
    /// The passing value with the best objective value (ties: the lower load).
    pub best: Option<f64>,
    /// The objective value at `best`.
    pub best_score: Option<f64>,
    /// The lowest value that failed a condition.
    pub first_fail: Option<f64>,
    /// `Optimum`, or `MinFails` when no value passed.
    pub outcome: SearchOutcome,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum OptimumNext {
    Probe(f64),
    Done(OptimumResult),
}

/// The ladder-then-refine search for the best passing value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OptimumSearch {
    bounds: Bounds,
    goal: Goal,
    /// Every probe so far, in order.
    pub probes: Vec<Probe>,
}

impl OptimumSearch {
    pub fn new(bounds: Bounds, goal: Goal) -> OptimumSearch {
        OptimumSearch {
            bounds,
            goal,
            probes: Vec::new(),
        }
    }

    fn round(&self, v: f64) -> f64 {
        if self.bounds.integer {
            v.round()
        } else {
            v
        }
    }

    fn probed(&self, v: f64) -> bool {
        self.probes.iter().any(|p| p.value == v)
    }

    /// The best passing probe: best objective value, ties to the lower load.
    fn best(&self) -> Option<Probe> {
        let mut best: Option<Probe> = None;
        for p in self.probes.iter().filter(|p| p.passed) {
            let Some(score) = p.score else { continue };
            let wins = best.is_none_or(|b| {
                let bs = b.score.unwrap_or(f64::NAN);
                self.goal.better(score, bs) || (score == bs && p.value < b.value)
            });
            if wins {
                best = Some(*p);
            }
        }
        best
    }

    fn first_fail(&self) -> Option<f64> {
        self.probes
            .iter()
            .filter(|p| !p.passed)
            .map(|p| p.value)
            .min_by(f64::total_cmp)
    }

    /// The next ladder value, while the ladder runs.
    fn ladder(&self) -> Option<f64> {
        let Some(last) = self.probes.last() else {
            return Some(self.round(self.bounds.min));
        };
        if !last.passed || last.value >= self.bounds.max {
            return None;
        }
        // Refinement has started once a probe is not above its predecessor.
        let rising = self.probes.windows(2).all(|w| w[1].value > w[0].value);
        rising.then(|| self.round((last.value * 2.0).min(self.bounds.max)))
    }

    /// The midpoint towards `neighbour` of `best`, when the gap is wider than the
    /// precision and the midpoint is new.
    fn midpoint(&self, best: f64, neighbour: f64) -> Option<f64> {
        if (neighbour - best).abs() <= self.bounds.tolerance(best) {
            return None;
        }
        let mid = self.round((best + neighbour) / 2.0);
        let inside = mid > best.min(neighbour) && mid < best.max(neighbour);
        (inside && !self.probed(mid)).then_some(mid)
    }

    /// The next value to probe, or the result.
    pub fn next(&self) -> OptimumNext {
        if let Some(v) = self.ladder() {
            return OptimumNext::Probe(v);
        }
        let best = self.best();
        let done = OptimumNext::Done(OptimumResult {
            best: best.map(|b| b.value),
            best_score: best.and_then(|b| b.score),
            first_fail: self.first_fail(),
            outcome: if best.is_some() {
                SearchOutcome::Optimum
            } else {
                SearchOutcome::MinFails
            },
        });
        let Some(best) = best else { return done };
        if self.probes.len() >= MAX_PROBES {
            return done;
        }
        let below = self
            .probes
            .iter()
            .map(|p| p.value)
            .filter(|v| *v < best.value)
            .max_by(f64::total_cmp);
        let above = self
            .probes
            .iter()
            .map(|p| p.value)
            .filter(|v| *v > best.value)
            .min_by(f64::total_cmp);
        [below, above]
            .into_iter()
            .flatten()
            .find_map(|n| self.midpoint(best.value, n))
            .map_or(done, OptimumNext::Probe)
    }

    /// Records a probe: whether it met every condition and its objective value (a
    /// passing probe without one counts as failing).
    pub fn record(&mut self, value: f64, passed: bool, score: Option<f64>) {
        self.probes.push(Probe {
            value,
            passed: passed && score.is_some_and(f64::is_finite),
            score,
        });
    }
}

#[cfg(test)]
mod tests;
