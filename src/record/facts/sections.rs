//! The typed sections of `RunFacts`, each as the suite, a merge or a search stores it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The connections the measured requests opened (`metrics::Connections`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionFacts {
    #[serde(default)]
    pub opened: u64,
    #[serde(default)]
    pub tls_handshakes: u64,
    #[serde(default)]
    pub tls_resumed: u64,
}

/// How the prompts' lengths differed (`input_lengths`): the server's count less the
/// plan's target, the client's less the target, the server's less the client's; each
/// `null` where no measured request had both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct InputLengthFacts {
    #[serde(default)]
    pub server_minus_target: Option<LengthDiff>,
    #[serde(default)]
    pub client_minus_target: Option<LengthDiff>,
    #[serde(default)]
    pub server_minus_client: Option<LengthDiff>,
}

/// One difference of input lengths over the measured successful requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LengthDiff {
    pub mean: f64,
    pub max_abs: u64,
    pub requests: u64,
}

/// The run's time facts (`time`): its slice width, its steady-state window or why it has
/// none, a ramp's steps, and a stop on saturation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeFacts {
    /// The width of the report's slices (s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_s: Option<f64>,
    /// The steady-state window; `Some(None)` a run stored without one (`null`).
    #[serde(
        default,
        deserialize_with = "super::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub steady: Option<Option<SteadyWindow>>,
    /// Why the run has no steady-state window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_missing: Option<String>,
    /// A ramp's steps (a rate curve's or a concurrency curve's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepFacts>>,
    /// An exploring run's ending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explore: Option<ExploreFacts>,
    /// The run's stop on over-saturation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<SaturationStopFacts>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl TimeFacts {
    /// The steady-state window, when the run had one.
    pub fn steady(&self) -> Option<SteadyWindow> {
        self.steady.flatten()
    }
}

/// How an exploring run ended: the level it saturated at, under the name of its kind
/// (`saturation_concurrency`, or `saturation_rps` for an open loop; `null` when it did
/// not saturate), and why it stopped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExploreFacts {
    #[serde(
        default,
        deserialize_with = "super::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub saturation_concurrency: Option<Option<u32>>,
    #[serde(
        default,
        deserialize_with = "super::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub saturation_rps: Option<Option<f64>>,
    pub reason: String,
}

/// A steady-state window, seconds on the records' time base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyWindow {
    pub start_s: f64,
    pub end_s: f64,
}

/// One step of a ramp: its planned rate (or concurrency), its window and its metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFacts {
    /// A rate ramp's rate (req/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// A concurrency ramp's slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<f64>,
    pub start_s: f64,
    pub end_s: f64,
    /// The step's metrics by name (`requests_*` counts are integers; unknown: `null`).
    #[serde(default)]
    pub metrics: Map<String, Value>,
    /// Keys this version does not know, as stored.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl StepFacts {
    /// The step's value of `metric` (`None`: unknown or not kept).
    pub fn metric(&self, metric: &str) -> Option<f64> {
        self.metrics.get(metric)?.as_f64()
    }
}

/// Why and when a run stopped on over-saturation (`metrics::saturation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SaturationStopFacts {
    /// `"saturated"`.
    pub reason: String,
    pub at_s: f64,
    /// Each pair: the baseline's and the last slice's.
    pub in_flight: [Option<f64>; 2],
    pub ttft_p50_ms: [Option<f64>; 2],
    pub completions_per_s: [Option<f64>; 2],
    pub arrivals_per_s: Option<f64>,
    /// Requests in flight at the stop, cancelled.
    pub cancelled: u64,
}

impl SaturationStopFacts {
    /// The reason of a stop on saturation.
    pub const SATURATED: &'static str = "saturated";
}

/// The warm pool opened before the clock (`engine::preconnect`); the TLS fields only
/// for `https://`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PreconnectFacts {
    pub wanted: u64,
    pub opened: u64,
    pub slow: u64,
    pub slowest_ms: f64,
    pub wall_ms: f64,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake_mean_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake_max_ms: Option<f64>,
}

/// The server's gauges after a cancelled run against their level before it
/// (`telemetry::settle`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettleFacts {
    pub before: Gauges,
    pub after: Gauges,
    pub waited_ms: u64,
    pub settled: bool,
}

/// The two gauges of one scrape; `None` where the server has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Gauges {
    pub running: Option<f64>,
    pub kv_usage: Option<f64>,
}

/// A shard's meeting at the start barrier (`distribute::barrier`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BarrierFacts {
    /// `"leader"` (shard 1) or `"follower"`.
    pub role: String,
    /// A follower's: the leader's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    /// The leader's: the shards at the barrier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards_ready: Option<u64>,
    /// The round trip to the leader (µs; 0 for the leader).
    #[serde(default)]
    pub rtt_us: u64,
    /// Shard 1's clock minus this shard's (µs).
    #[serde(default)]
    pub clock_offset_us: i64,
    /// How long the shard waited at the barrier (ms).
    #[serde(default)]
    pub waited_ms: f64,
    /// The delay to the common start (ms).
    #[serde(default)]
    pub delay_ms: f64,
}

/// One class of a mix run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixClassFacts {
    pub name: String,
    pub dataset: String,
    /// The class's model, when its own.
    pub model: Option<String>,
    pub weight: f64,
    pub planned_share: f64,
    /// Its measured requests.
    pub requests: u64,
}

/// One shard's client in a merged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardClientFacts {
    pub shard: String,
    pub client_cpu_ratio: Option<f64>,
    pub lateness_p99: Option<f64>,
    pub client_bound: Option<String>,
}

/// How closely a merged run's shards started it (ms on the merged time base).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardStarts {
    pub start_spread_ms: Option<f64>,
    pub first_measured_spread_ms: Option<f64>,
    #[serde(default)]
    pub by_shard: std::collections::BTreeMap<String, ShardStartFacts>,
}

/// One shard's start in a merged run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShardStartFacts {
    pub start_ms: f64,
    pub first_measured_ms: Option<f64>,
}

/// An SLA search's outcome (`search`): a bisection's best passing value, or an
/// optimum search's objective and best value; then where it failed and every step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchFacts {
    /// `rate` or `concurrency`.
    pub variable: String,
    /// `found`, `min_fails`, ...
    pub outcome: String,
    /// An optimum search's objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<SearchObjective>,
    /// An optimum search's best value (`Some(None)`: stored `null`).
    #[serde(
        default,
        deserialize_with = "super::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub best: Option<Option<f64>>,
    /// The objective's value at `best`.
    #[serde(
        default,
        deserialize_with = "super::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub best_score: Option<Option<f64>>,
    /// A bisection's highest passing value.
    #[serde(
        default,
        deserialize_with = "super::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub best_pass: Option<Option<f64>>,
    pub first_fail: Option<f64>,
    pub failed_metric: Option<String>,
    #[serde(default)]
    pub steps: Vec<SearchStepFacts>,
    #[serde(default)]
    pub message: String,
}

/// An optimum search's objective: the metric and whether higher or lower is better.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchObjective {
    pub metric: String,
    pub goal: String,
}

/// One probe of a search: its value and whether it met the SLO.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchStepFacts {
    pub value: f64,
    pub passed: bool,
}

/// A run not executed because an earlier tier saturated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedFacts {
    /// `"saturated"`.
    pub reason: String,
    /// The run that saturated.
    pub by: String,
}
