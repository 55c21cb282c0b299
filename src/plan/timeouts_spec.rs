//! `[endpoints.NAME.timeouts]`: connect, read and total timeouts of an endpoint's
//! requests, their defaults the one set `control::timeouts` holds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::HumanDuration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsSpec {
    #[serde(default = "default_connect")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "1h"))]
    pub connect: HumanDuration,
    /// Longest wait for the next byte of a response.
    #[serde(default = "default_read")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "24h"))]
    pub read: HumanDuration,
    /// Longest whole request.
    #[serde(default = "default_total")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "24h"))]
    pub total: HumanDuration,
}

// The one set of defaults, shared with the engine: `control::timeouts`.
fn default_connect() -> HumanDuration {
    HumanDuration(crate::control::timeouts::CONNECT)
}
fn default_read() -> HumanDuration {
    HumanDuration(crate::control::timeouts::READ)
}
fn default_total() -> HumanDuration {
    HumanDuration(crate::control::timeouts::TOTAL)
}

impl Default for TimeoutsSpec {
    fn default() -> Self {
        TimeoutsSpec {
            connect: default_connect(),
            read: default_read(),
            total: default_total(),
        }
    }
}
