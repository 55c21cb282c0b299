//! `[endpoints.NAME] telemetry = { ... }` as written: what to scrape during each run and
//! how often. Absent, telemetry is on at the endpoint's own metrics page at 1 s (the
//! key's absence keeps every run id as it was). Checked beyond the schema in `semantic`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::HumanDuration;

/// The sampler's default interval.
pub const DEFAULT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Server telemetry scraped during every run's measured pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySpec {
    /// `false`: no scrapes during runs (the cache counters of `metrics` are still read
    /// before and after each run).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Time between scrapes; each scrape's timeout is below it.
    #[serde(default = "default_interval")]
    #[schemars(extend("x-duration-minimum" = "100ms", "x-duration-maximum" = "1h"))]
    pub interval: HumanDuration,
    /// More pages scraped besides the endpoint's own (`metrics.path`, default `/metrics`):
    /// a server path joined to `base_url` by the URL rule, or a full URL (an exporter such
    /// as NVIDIA's DCGM exporter, `http://gpu-host:9400/metrics`). The endpoint's key and
    /// headers go only to URLs of its own origin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub urls: Vec<String>,
}

fn yes() -> bool {
    true
}

fn default_interval() -> HumanDuration {
    HumanDuration(DEFAULT_INTERVAL)
}

impl Default for TelemetrySpec {
    fn default() -> Self {
        TelemetrySpec {
            enabled: true,
            interval: default_interval(),
            urls: Vec::new(),
        }
    }
}
