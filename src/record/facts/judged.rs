//! The run's judged counts, as the stages that make them hand them to the store: the
//! records' evidence of trustworthiness (`trust::evidence` folds it) and the server's
//! counters against the client's sums (`telemetry::counts` reads them). Their rules live
//! with those stages; the stored shapes live here, with the rest of the run's facts.

use serde::{Deserialize, Serialize};

/// One request that shows a problem: its index and what was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    pub request: u64,
    pub seen: String,
}

/// The counters of a run's evidence (measured requests only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Evidence {
    /// Successful requests whose output usage could be held against the client's count.
    pub output_checked: u64,
    /// Of those, the ones that disagree beyond the tolerance.
    pub output_mismatched: u64,
    pub output_example: Option<Example>,
    /// Successful streamed answers of at least `burst_min_tokens` output tokens.
    pub streams_checked: u64,
    /// Of those, the ones whose tokens all arrived at once.
    pub bursts: u64,
    pub burst_example: Option<Example>,
    /// Successful requests that asked for a stream and got a whole body.
    pub unstreamed: u64,
    /// Records with values that cannot be (times out of order).
    pub impossible: u64,
    pub impossible_example: Option<Example>,
}

/// The server's counts over a window: each counter's growth.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSide {
    pub prompt_tokens: Option<u64>,
    pub generation_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    /// Requests the server finished successfully.
    pub requests: Option<u64>,
}

/// The client's sums over the requests it sent in a window (every phase sent in it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSide {
    /// `usage.prompt_tokens` summed (requests without usage add nothing).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// Requests sent, failed ones included.
    pub requests: u64,
    /// Requests whose answer carried usage.
    pub requests_with_usage: u64,
    /// Requests that succeeded (what a server's success counter counts).
    #[serde(default)]
    pub requests_ok: u64,
}

/// One window's two sides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassCounts {
    pub server: ServerSide,
    pub client: ClientSide,
}

/// A run's counts, as stored in its facts (`server_counts`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCounts {
    /// The counters' growth over the window.
    pub server: ServerSide,
    /// The client's sums over the requests it sent in the window.
    pub client: ClientSide,
    /// Which passes the window holds: `"warmup+measured"` (the measured pass, its warmup
    /// requests included).
    pub window: String,
    /// The most requests the server had running plus waiting at one telemetry scrape
    /// during the measured pass (`None` without telemetry or those gauges).
    pub server_in_flight_max: Option<u64>,
    /// The most requests the client had in flight at once in the window.
    pub client_in_flight_max: Option<u64>,
    /// How long the last scrape waited for the server's counters to catch up with the
    /// client (ms; bounded by `telemetry::counts::SETTLE_LIMIT`).
    pub settle_ms: u64,
    /// A warm run's priming pass, counted apart (absent for other runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priming: Option<PassCounts>,
}
