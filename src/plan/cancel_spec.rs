//! `cancel` of a load as written: the share of measured requests the client aborts,
//! when after send, and how long the server may take afterwards to give back what the
//! aborted requests held (`settle`). The planner checks it and draws which requests
//! (`planner::cancel`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::HumanDuration;

/// Cancellation injection: `{ share = 0.1, after = "500ms" }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelSpec {
    /// The share of measured requests the client aborts (0 < share ≤ 1), each chosen by a
    /// seeded draw per request index (the plan's seed).
    #[schemars(range(min = 0.000001, max = 1))]
    pub share: f64,
    /// When, after its send, a chosen request is aborted: a duration (`"500ms"`) or a
    /// uniform range (`{ min = "200ms", max = "2s" }`, drawn per request from the seed).
    pub after: CancelAfter,
    /// After the run, how long the server may take for its running requests and its
    /// KV-cache usage (telemetry) to return to their level before the run; longer is a
    /// `kv_leak` warning. Default `"10s"`, at most `"10m"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "10m"))]
    pub settle: Option<HumanDuration>,
}

/// When a chosen request is aborted: a fixed time after send, or uniform in a range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum CancelAfter {
    Fixed(HumanDuration),
    Range {
        min: HumanDuration,
        max: HumanDuration,
    },
}
