//! An exploring load as written in a plan (`load = { explore = { ... } }`): a closed loop
//! that starts at `from` requests in flight and grows by `growth` each `step` until the
//! server saturates, then bisects between the last level that gained and the first that
//! did not. The planner checks it (`planner::explore`); the rules it follows are
//! `metrics::explore`'s. This module only holds what the user wrote.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges;
use crate::units::HumanDuration;

/// What an exploring load grows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExploreBy {
    /// Requests in flight (a closed loop).
    #[default]
    Concurrency,
}

/// A closed loop that finds where the server saturates: each level is held for `step`,
/// judged on the requests that ended in it, and the next chosen from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExploreSpec {
    /// The first level (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub from: Option<u32>,
    /// The highest level held (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_CONCURRENCY))]
    pub max: Option<u32>,
    /// The factor from one level to the next while growing (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.1, max = 16.0))]
    pub growth: Option<f64>,
    /// What grows: `concurrency` (the default and, for now, the only choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<ExploreBy>,
    /// How long each level is held (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "100ms", "x-duration-maximum" = "24h"))]
    pub step: Option<HumanDuration>,
    /// A level saturates when its output tok/s rose by less than this share over the
    /// last level that gained, for a full `growth` (scaled down for a smaller rise while
    /// bisecting); default 0.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 10.0))]
    pub min_gain: Option<f64>,
    /// A level saturates when its TTFT p99 is above this multiple of the first level's
    /// (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.0, max = 1000.0))]
    pub ttft_factor: Option<f64>,
    /// A level saturates when more than this share of the requests that ended in it
    /// failed (default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_failures: Option<f64>,
    /// Bisection probes between the last level that gained and the first that did not
    /// (default 3; 0 for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 20))]
    pub probes: Option<u32>,
}
