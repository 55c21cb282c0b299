//! SLA searches with an objective (`output_tps = "max"`, `ttft_p99 = "min"`), without
//! I/O: splitting a search's `slo` into its objective and its limit conditions, and the
//! state machine that picks the next load to probe — a doubling ladder from `min` until
//! a probe fails a condition (or `max` is probed), then midpoints around the best passing
//! value until no neighbour is farther than the precision. Knows nothing about plans,
//! HTTP or storage; the limit search is `sla`.

use std::collections::BTreeMap;

use super::condition::{Condition, ConditionError, Op, Threshold};
use super::sla::{parse_slo, Bounds, SearchOutcome};

/// Probes a search never exceeds, whatever the precision.
const MAX_PROBES: usize = 64;

/// Which way the objective goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// The load value with the lowest metric (latency-type).
    Min,
    /// The load value with the highest metric (throughput-type).
    Max,
}

impl Goal {
    /// `"max"` or `"min"` (the value of a `slo` entry), else `None`.
    pub fn parse(text: &str) -> Option<Goal> {
        match text.trim() {
            "max" => Some(Goal::Max),
            "min" => Some(Goal::Min),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Goal::Min => "min",
            Goal::Max => "max",
        }
    }

    /// Whether `a` is strictly better than `b`.
    fn better(self, a: f64, b: f64) -> bool {
        match self {
            Goal::Max => a > b,
            Goal::Min => a < b,
        }
    }
}

/// The metric to optimise and which way.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    pub metric: String,
    pub goal: Goal,
}

impl Objective {
    /// A condition that holds whenever the objective's value is known, so that a probe
    /// without a value (no successful request) fails rather than wins.
    pub fn known_condition(&self) -> Condition {
        Condition {
            metric: self.metric.clone(),
            op: Op::Ge,
            threshold: Threshold::Absolute(f64::MIN),
            text: format!("a value (the objective `{}`)", self.goal.as_str()),
        }
    }
}

/// A search's `slo` as its objective (at most one) and its limit conditions.
pub fn split_slo(
    slo: &BTreeMap<String, String>,
) -> Result<(Option<Objective>, Vec<Condition>), ConditionError> {
    let mut objective = None;
    let mut limits = Vec::new();
    for (metric, text) in slo {
        match Goal::parse(text) {
            Some(goal) if objective.is_none() => {
                super::condition::parse_condition(metric, "<= 0")?;
                objective = Some(Objective {
                    metric: metric.clone(),
                    goal,
                });
            }
            Some(_) => {
                return Err(ConditionError::Syntax {
                    metric: metric.clone(),
                    text: text.clone(),
                    reason: "a search has at most one objective (`min` or `max`)".into(),
                })
            }
            None => limits.push((metric, text)),
        }
    }
    Ok((objective, parse_slo(limits)?))
}

/// One probe: its value, whether it met every condition, and its objective value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub value: f64,
    pub passed: bool,
    pub score: Option<f64>,
}

/// The result of a finished objective search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimumResult {
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
pub enum OptimumNext {
    Probe(f64),
    Done(OptimumResult),
}

/// The ladder-then-refine search for the best passing value.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimumSearch {
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
