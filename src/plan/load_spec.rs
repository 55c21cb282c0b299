//! A run's load as written in a plan: closed and open loops, their arrivals and warmup,
//! and SLA searches. `*Spec` types hold what the user wrote; the planner checks them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges;
use crate::units::HumanDuration;

/// How arrivals are spaced in an open loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    #[default]
    Poisson,
    /// Gamma-distributed gaps with shape `burstiness` (1 = Poisson, < 1 burstier).
    Gamma,
    Constant,
}

/// Warmup requests: a count, or a share of the measured requests (`"10%"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WarmupSpec {
    Count(u32),
    Share(String),
}

/// One load tier: closed loop (`concurrency`) or open loop (`rate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Closed loop: requests in flight at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub concurrency: Option<u32>,
    /// Open loop: arrivals per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = ranges::MIN_RATE, max = ranges::MAX_RATE))]
    pub rate: Option<f64>,
    /// Measured requests (warmup not included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_REQUESTS))]
    pub requests: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0, "maximum" = ranges::MAX_REQUESTS))]
    pub warmup: Option<WarmupSpec>,
    /// Soft stop: no new requests after it; in-flight ones finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "168h"))]
    pub duration: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<Arrivals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.01, max = 100))]
    pub burstiness: Option<f64>,
    /// Open loop whose rate changes within the run, instead of `rate`: a curve
    /// (`{ from = 1, to = 64, over = "60s", shape = "linear" }`) or a rate series
    /// (`{ rates = [5, 20, 60], step = "10s" }`). Its requests are its planned arrivals
    /// (`requests`, when set, takes the first ones); no warmup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<super::RampSpec>,
    /// Closed loop whose concurrency changes within the run, instead of `concurrency`: a
    /// curve (`{ from = 1, to = 64, over = "60s", shape = "step", steps = 4 }`) or a series
    /// (`{ concurrencies = [1, 4, 16], step = "10s" }`). The run ends with the ramp;
    /// `requests` or `duration` may end it sooner. No warmup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_ramp: Option<super::ConcurrencyRampSpec>,
    /// Closed loop that finds the server's saturation, instead of `concurrency`: from
    /// `from` requests in flight, grown by `growth` each `step` until a level gains too
    /// little throughput (or its TTFT or failures rise too far), then bisected
    /// (`{ from = 1, max = 256, step = "30s" }`). Each level is a ramp step of the run;
    /// the run reports its knee and saturation point. No warmup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explore: Option<super::ExploreSpec>,
    /// Stop the run early once it is over-saturated (`"saturated"`): its requests in
    /// flight and its TTFT keep rising while its completions stall, by the rule of the
    /// book (loads/explore.md). The run is stored with the reason (`saturated`). Off
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_when: Option<StopWhen>,
    /// With `stop_when`: what a stop means for the suite's other tiers. `"skip_higher"`
    /// skips every later run that is the same but for its load (endpoint, model, dataset
    /// and every other axis) at a higher `concurrency` (or `rate`), stored with a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_saturation: Option<OnSaturation>,
    /// Cancellation injection: that share of measured requests is aborted by the client
    /// at the given time after its send (`{ share = 0.1, after = "500ms" }`, or `after =
    /// { min = "200ms", max = "2s" }`); they are stored `cancelled`, kept out of the
    /// failures and the latency metrics, and counted in `cancelled_requests`. After the
    /// run the server's running requests and KV-cache usage must return to their level
    /// before it within `settle` (default `"10s"`), else a `kv_leak` warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<super::CancelSpec>,
    /// Open loop: most requests in flight at once (unbounded when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max_in_flight: Option<u32>,
    /// Runs of this fixed load (default 1): each a stored run of its own, shown as
    /// `repeat=k` and linked to its group, whose id is the run's id without `repeat`.
    /// Reports give each group's mean and a Student t 95% interval across its repeats, and
    /// `compare` judges groups by them. Cold repeats get fresh prompts; warm ones the same.
    /// Not for a search (its `trials` repeat probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_REPEAT))]
    pub repeat: Option<u32>,
    /// SLA search instead of a fixed tier: find the most `concurrency` (or `rate`) that
    /// still meets every condition of `slo`. Each probe is a run of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchVariable>,
    /// Search: metric name → condition every probe must meet, pooled over its trials
    /// (`ttft_p99 = "<= 2s"`, `success_ratio = ">= 0.99"`); at most one entry may be an
    /// objective instead, `"max"` or `"min"` (`output_tps = "max"`): the search then finds
    /// the passing value with the best value of that metric.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub slo: BTreeMap<String, String>,
    /// Search: the first value probed (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = ranges::MIN_RATE, max = ranges::MAX_RATE))]
    pub min: Option<f64>,
    /// Search: the highest value probed (default 512 for concurrency, 1000 for rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = ranges::MIN_RATE, max = ranges::MAX_RATE))]
    pub max: Option<f64>,
    /// Search: measured requests of each probe, a count or a multiple of the probed
    /// value (`"4x"`, the default; at least 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_REQUESTS))]
    pub requests_per_step: Option<StepRequests>,
    /// Search: runs per probed value; the verdict pools their requests (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub trials: Option<u32>,
    /// Search: stop bisecting when the bracket is this narrow, a share of the passing
    /// value (`"5%"`, the default) or an absolute width. Concurrency stops at 1 at least.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = ranges::MIN_PRECISION, "maximum" = ranges::MAX_RATE))]
    pub precision: Option<PrecisionSpec>,
}

/// When a run stops early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopWhen {
    /// Over-saturated: in flight and TTFT rising while completions stall.
    Saturated,
}

/// What a run's stop on saturation means for the tiers after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnSaturation {
    /// Skip the later runs that differ only by a higher `concurrency` (or `rate`).
    SkipHigher,
}

/// What an SLA search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchVariable {
    /// Closed loop: requests in flight (integers).
    Concurrency,
    /// Open loop: arrivals per second.
    Rate,
}

/// Requests of one search probe: a count, or a multiple of the probed value (`"4x"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StepRequests {
    Count(u32),
    Multiple(String),
}

/// Width at which a search stops: absolute, or a share of the passing value (`"5%"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PrecisionSpec {
    Absolute(f64),
    Share(String),
}
