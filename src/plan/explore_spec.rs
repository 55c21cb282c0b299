//! An exploring load as written in a plan (`load = { explore = { ... } }`): a closed loop
//! that starts at `from` requests in flight (or an open loop at `from` req/s, `by =
//! "rate"`) and grows by `growth` each `step` until the server saturates, then bisects
//! between the last level that gained and the first that did not. The planner checks it (`planner::explore`); the rules it follows are
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
    /// Arrivals per second (an open loop, Poisson arrivals).
    Rate,
}

/// How long each level of an exploring load is held: a duration (`"30s"`), or a count
/// of requests that end in it (`200`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ExploreStep {
    /// Requests that end in the level (successful or failed).
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_REQUESTS))]
    Requests(u32),
    #[schemars(extend("x-duration-minimum" = "100ms", "x-duration-maximum" = "24h"))]
    Duration(HumanDuration),
}

impl<'de> Deserialize<'de> for ExploreStep {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ExploreStep, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = ExploreStep;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration (\"30s\") or a count of requests (200)")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ExploreStep, E> {
                u32::try_from(v)
                    .map(ExploreStep::Requests)
                    .map_err(|_| E::custom(format!("explore `step` of {v} requests is too many")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ExploreStep, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom("explore `step` cannot be negative")),
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ExploreStep, E> {
                crate::units::parse_duration(v)
                    .map(|d| ExploreStep::Duration(HumanDuration(d)))
                    .map_err(E::custom)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// A level of an exploring load as written: requests in flight (a whole number), or
/// arrivals per second (`by = "rate"`, in hundredths of a req/s at the finest). A whole
/// value is kept, and shown, as an integer, so plans written before levels could be
/// fractional keep their run ids.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExploreLevel(pub f64);

impl JsonSchema for ExploreLevel {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExploreLevel".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "number",
            "minimum": 0.01,
            "maximum": ranges::MAX_CONCURRENCY,
        })
    }
}

impl ExploreLevel {
    /// The value as a whole number, when it is one (and fits).
    pub fn whole(self) -> Option<u32> {
        let v = self.0;
        (v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v)).then_some(v as u32)
    }
}

impl Serialize for ExploreLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.whole() {
            Some(n) => s.serialize_u32(n),
            None => s.serialize_f64(self.0),
        }
    }
}

impl<'de> Deserialize<'de> for ExploreLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ExploreLevel, D::Error> {
        f64::deserialize(d).map(ExploreLevel)
    }
}

/// A closed loop that finds where the server saturates: each level is held for `step`,
/// judged on the requests that ended in it, and the next chosen from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExploreSpec {
    /// The first level (default 1): requests in flight, a whole number; by `rate`, req/s,
    /// down to 0.01 (a fractional `from` or `max` makes every level a hundredth of a req/s
    /// at the finest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<ExploreLevel>,
    /// The highest level held (default 1024), as `from`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<ExploreLevel>,
    /// The factor from one level to the next while growing (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.1, max = 16.0))]
    pub growth: Option<f64>,
    /// What grows: `concurrency` (the default: requests in flight, a closed loop) or
    /// `rate` (arrivals per second, an open loop; `from` and `max` are then req/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<ExploreBy>,
    /// How long each level is held (required): a duration (`"30s"`), or a count of
    /// requests that end in it (`200`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<ExploreStep>,
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
    /// A level also saturates when the server's queue (its waiting requests, from the
    /// endpoint's telemetry) kept growing through it (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_queue: Option<bool>,
    /// Bisection probes between the last level that gained and the first that did not
    /// (default 3; 0 for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 20))]
    pub probes: Option<u32>,
}
