//! `[endpoints.NAME] limits = { ... }`: how much of each response perfplan reads and
//! keeps (the longest SSE event, the largest body, the text kept, how far past its output
//! limit a stream may run). Every key is optional; the defaults are the engine's
//! (`engine::ResponseLimits`), the one copy of those numbers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diag::Diagnostic;
use super::node::{Node, Step};
use crate::units::HumanBytes;

/// Below this `max_event` or `max_body`, ordinary chunks would not fit: a warning.
const SMALL_BYTES: u64 = 1024;

/// Response limits of one endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// Longest SSE line, or data of one event (default "4MiB"); longer is `overlong`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub max_event: Option<HumanBytes>,
    /// Largest non-streamed response body (default "64MiB"); larger is `overlong`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub max_body: Option<HumanBytes>,
    /// Generated text kept per response, for multi-turn answers, `--debug` and the
    /// client's token count (default "1MiB"); the output beyond it is still counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_text: Option<HumanBytes>,
    /// A stream is cut as `overlong` after `overlong_factor × limit + overlong_slack`
    /// output chunks, `limit` being the request's `max_tokens` (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1.0))]
    pub overlong_factor: Option<f64>,
    /// See `overlong_factor` (default 64 chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlong_slack: Option<u32>,
    /// Output chunks of a stream whose request sent no output limit (default 262144).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_chunks: Option<u32>,
}

impl LimitsSpec {
    pub fn is_empty(&self) -> bool {
        *self == LimitsSpec::default()
    }
}

/// Problems of one endpoint's limits the schema cannot see (sizes written as text),
/// located at their keys: a size of 0 is an error, one below 1 KiB a warning.
pub fn check(endpoint: &str, limits: &LimitsSpec, tree: &Node) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let at = |key: &str| {
        let path: Vec<Step> = ["endpoints", endpoint, "limits", key]
            .iter()
            .map(|s| Step::Key(s.to_string()))
            .collect();
        tree.locate(&path)
    };
    for (key, value) in [
        ("max_event", limits.max_event),
        ("max_body", limits.max_body),
    ] {
        let Some(v) = value.filter(|v| v.0 < SMALL_BYTES) else {
            continue;
        };
        let d = match v.0 {
            0 => Diagnostic::error(
                format!("endpoint `{endpoint}`: limits.{key} = {v}: must be at least 1 byte"),
                Some(at(key)),
            ),
            _ => Diagnostic::warning(
                format!(
                    "endpoint `{endpoint}`: limits.{key} = {v} is below 1KiB: ordinary \
                     responses will be cut as `overlong`"
                ),
                Some(at(key)),
            ),
        };
        diags.push(d.with_help(format!("leave {key} out for the default")));
    }
    diags
}
