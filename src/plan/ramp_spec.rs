//! A load ramp as written in a plan (`load = { ramp = { ... } }`): an open loop whose
//! rate changes within one run, as a curve from `from` to `to` over `over`, or a series
//! of rates each held for `step`. The planner checks it and resolves it into a rate
//! curve (`planner::ramp`); this module only holds what the user wrote.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges;
use crate::units::HumanDuration;

/// How a ramp's rate goes from `from` to `to`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RampShape {
    /// The rate grows (or falls) in a straight line.
    #[default]
    Linear,
    /// The rate grows by the same factor every second: from · (to / from)^(t / over).
    Exponential,
    /// `steps` rates evenly spaced from `from` to `to`, each held for `over / steps`.
    Step,
}

/// An open loop whose rate changes within the run. Either a curve (`from`, `to`,
/// `over`, `shape`, and `steps` for a step shape) or a rate series (`rates`, `step`).
/// Arrivals follow the time-varying rate (`arrivals` = `"poisson"` or `"constant"`),
/// seeded; the run's requests are the ramp's planned arrivals, round(∫ rate dt).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RampSpec {
    /// The rate at the start, req/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = ranges::MIN_RATE, max = ranges::MAX_RATE))]
    pub from: Option<f64>,
    /// The rate at the end, req/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = ranges::MIN_RATE, max = ranges::MAX_RATE))]
    pub to: Option<f64>,
    /// How long the ramp lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "168h"))]
    pub over: Option<HumanDuration>,
    /// `linear` (the default), `exponential` or `step`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<RampShape>,
    /// A step shape: how many rates (at least 2). A linear or exponential ramp: how many
    /// equal windows its per-step metrics cut it into (none when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2, max = ranges::MAX_RAMP_STEPS))]
    pub steps: Option<u32>,
    /// A rate series: each rate (req/s, from 0.001 to 1000000) held for `step`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = ranges::MAX_RAMP_STEPS))]
    pub rates: Vec<f64>,
    /// A rate series: how long each rate is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "168h"))]
    pub step: Option<HumanDuration>,
}

/// A closed loop whose concurrency changes within the run
/// (`load = { concurrency_ramp = { ... } }`): the number of requests in flight follows a
/// curve (`from`, `to`, `over`, `shape`, and `steps` for a step shape), rounded to whole
/// slots, or a series (`concurrencies`, `step`). A rise starts new requests at once; a fall
/// lets requests in flight finish. The run ends with the curve (or its `duration`, or
/// `requests`); its prompts are drawn as they are sent, as for a `duration` closed loop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConcurrencyRampSpec {
    /// Requests in flight at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub from: Option<u32>,
    /// Requests in flight at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub to: Option<u32>,
    /// How long the ramp lasts: the run ends with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "168h"))]
    pub over: Option<HumanDuration>,
    /// `linear` (the default), `exponential` or `step`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<RampShape>,
    /// A step shape: how many concurrencies (at least 2), evenly spaced and rounded. A
    /// linear or exponential ramp: how many equal windows its per-step metrics cut it into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2, max = ranges::MAX_RAMP_STEPS))]
    pub steps: Option<u32>,
    /// A concurrency series: each held for `step`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = ranges::MAX_RAMP_STEPS))]
    #[schemars(inner(range(min = 1, max = ranges::MAX_CONCURRENCY)))]
    pub concurrencies: Vec<u32>,
    /// A concurrency series: how long each concurrency is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "168h"))]
    pub step: Option<HumanDuration>,
}

impl ConcurrencyRampSpec {
    /// The same curve as a ramp table with numbers for values (the planner's one curve
    /// type reads both).
    pub(crate) fn as_curve(&self) -> RampSpec {
        RampSpec {
            from: self.from.map(f64::from),
            to: self.to.map(f64::from),
            over: self.over,
            shape: self.shape,
            steps: self.steps,
            rates: self.concurrencies.iter().map(|&c| f64::from(c)).collect(),
            step: self.step,
        }
    }
}
