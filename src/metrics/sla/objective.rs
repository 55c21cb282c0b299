//! The objective of an SLA search (`output_tps = "max"`, `ttft_p99 = "min"`): splitting a
//! search's `slo` into its objective and its limit conditions. The search that follows it
//! is `search::ladder`.

use std::collections::BTreeMap;

use super::parse_slo;
use crate::metrics::condition::{Condition, ConditionError, Op, Threshold};

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
    pub fn better(self, a: f64, b: f64) -> bool {
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
    pub(crate) fn known_condition(&self) -> Condition {
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
                crate::metrics::condition::parse_condition(metric, "<= 0")?;
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
