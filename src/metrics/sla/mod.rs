//! The terms of an SLA search, without I/O, shared by the planner (which validates a
//! search), the gates and `search` (which owns the state machines that pick the next
//! load): the searched bounds and precision, how a search ended, its SLO conditions and
//! objective, the verdict of a probe against them, and the pooling of several trials'
//! request records into one sample (statistics are recomputed from the pooled records,
//! never averaged over trials). Knows nothing about plans, HTTP or storage.

use super::condition::{parse_condition, Condition, ConditionError};

/// When the bisection stops: the bracket `first_fail − best_pass` is at most this wide.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    /// A share of the passing value (`0.05` for `"5%"`).
    Relative(f64),
    /// An absolute width in the searched unit.
    Absolute(f64),
}

/// The searched range and how finely to search it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub min: f64,
    pub max: f64,
    /// Probe whole numbers only (concurrency).
    pub integer: bool,
    pub precision: Precision,
}

impl Bounds {
    /// How close two probed values near `at` may be for the search to stop (at least one
    /// step when probing whole numbers).
    pub fn tolerance(&self, at: f64) -> f64 {
        let t = match self.precision {
            Precision::Relative(share) => share * at,
            Precision::Absolute(width) => width,
        };
        if self.integer {
            t.max(1.0)
        } else {
            t
        }
    }
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchOutcome {
    /// A passing and a failing value within precision of each other.
    Found,
    /// Even `min` fails the SLO: there is no passing value.
    MinFails,
    /// `max` passes: the limit lies above the searched range.
    MaxPasses,
    /// An objective search (`output_tps = "max"`) found its best passing value.
    Optimum,
}

impl SearchOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchOutcome::Found => "found",
            SearchOutcome::MinFails => "min_fails",
            SearchOutcome::MaxPasses => "max_passes",
            SearchOutcome::Optimum => "optimum",
        }
    }

    pub fn parse(text: &str) -> Option<SearchOutcome> {
        [
            SearchOutcome::Found,
            SearchOutcome::MinFails,
            SearchOutcome::MaxPasses,
            SearchOutcome::Optimum,
        ]
        .into_iter()
        .find(|o| o.as_str() == text)
    }
}

/// `"4x"` → 4.0 (a positive multiple).
pub(crate) fn parse_multiple(text: &str) -> Option<f64> {
    let n: f64 = text.trim().strip_suffix('x')?.trim().parse().ok()?;
    (n.is_finite() && n > 0.0).then_some(n)
}

/// The SLO conditions of a search. Each must be absolute (a search has no baseline).
pub(crate) fn parse_slo<'a>(
    slo: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<Vec<Condition>, ConditionError> {
    let mut out = Vec::new();
    for (metric, text) in slo {
        let c = parse_condition(metric, text)?;
        if c.is_relative() {
            return Err(ConditionError::Syntax {
                metric: metric.clone(),
                text: text.clone(),
                reason: "a search SLO is absolute (a percentage needs a baseline)".into(),
            });
        }
        out.push(c);
    }
    Ok(out)
}

/// The success floor of a search whose `slo` sets no `success_ratio`: every measured
/// request of a probe must succeed (as EvalScope requires). Failed requests are left out
/// of the timing distributions, so without a floor a probe whose requests failed could
/// pass on the latencies of the few that succeeded.
pub(crate) const DEFAULT_SUCCESS_FLOOR: &str = ">= 1.0";

/// The success condition a search applies, and whether it is the default.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SuccessFloor {
    pub condition: Condition,
    /// `true`: the `slo` set no `success_ratio`, so [`DEFAULT_SUCCESS_FLOOR`] applies.
    pub default: bool,
}

impl SuccessFloor {
    /// `success_ratio >= 1.0 (the default: …)` or `success_ratio >= 0.99 (from slo)`.
    pub(crate) fn describe(&self) -> String {
        let how = if self.default {
            "the default: every measured request must succeed; set `success_ratio` in the \
             search's `slo` (e.g. \">= 0.99\") to allow failures"
        } else {
            "from the search's `slo`"
        };
        format!("success_ratio {} ({how})", self.condition.text)
    }
}

/// A search's limit conditions with its success floor: the `slo`'s own `success_ratio`
/// condition when it has one, else the default floor, checked before the others (a
/// probe with failures fails on them first).
pub(crate) fn with_success_floor(mut conds: Vec<Condition>) -> (Vec<Condition>, SuccessFloor) {
    if let Some(own) = conds.iter().find(|c| c.metric == "success_ratio") {
        let floor = SuccessFloor {
            condition: own.clone(),
            default: false,
        };
        return (conds, floor);
    }
    let condition = Condition {
        metric: "success_ratio".into(),
        op: super::condition::Op::Ge,
        threshold: super::condition::Threshold::Absolute(1.0),
        text: DEFAULT_SUCCESS_FLOOR.into(),
    };
    conds.insert(0, condition.clone());
    let floor = SuccessFloor {
        condition,
        default: true,
    };
    (conds, floor)
}

/// A probe's verdict: whether every condition held, and the first that did not.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    /// The metric that failed (`ttft_p99`), when one did.
    pub failed_metric: Option<String>,
    /// `ttft_p99 = 812.3 (<= 500)` for the failed condition.
    pub detail: Option<String>,
}

/// Checks `conditions` against a summary's values; an unknown value fails.
pub fn verdict(
    values: &std::collections::BTreeMap<String, Option<f64>>,
    conditions: &[Condition],
) -> Verdict {
    for c in conditions {
        let value = values.get(&c.metric).copied().flatten();
        let ok = value.is_some_and(|v| c.check(v, None).unwrap_or(false));
        if !ok {
            let shown = value.map_or("unknown".to_string(), |v| format!("{v:.3}"));
            return Verdict {
                passed: false,
                failed_metric: Some(c.metric.clone()),
                detail: Some(format!("{} = {shown} (needs {})", c.metric, c.text)),
            };
        }
    }
    Verdict {
        passed: true,
        failed_metric: None,
        detail: None,
    }
}

pub use objective::{split_slo, Goal, Objective};
pub use pool::{pool, Pool};

mod objective;
mod pool;
#[cfg(test)]
mod tests;
