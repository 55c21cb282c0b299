//! The request settings of a plan as written (`[defaults]`, stop sequences) and its
//! `[report]` table: serde + schemars types, like the rest of `spec`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ranges;
use super::spec::TokenRange;
use crate::units::HumanDuration;
use std::time::Duration;

/// A stop sequence or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StopSpec {
    One(String),
    Many(Vec<String>),
}

/// `[defaults]`: request settings. Only what is set here (or by an axis) is sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// `max_tokens`: fixed or `{min, max}` per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub output_tokens: Option<TokenRange>,
    /// Send the output limit as `max_completion_tokens` instead of `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = ranges::MAX_TOKENS))]
    pub min_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10))]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1), extend("exclusiveMinimum" = 0))]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1, max = 1_000_000))]
    pub top_k: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_token_ids: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 128))]
    pub n: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub top_logprobs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -2, max = 2))]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -2, max = 2))]
    pub presence_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 10), extend("exclusiveMinimum" = 0))]
    pub repetition_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    /// Stream the response (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Ask the server for a running usage on every streamed chunk
    /// (`stream_options: {include_usage: true, continuous_usage_stats: true}`, vLLM's
    /// per-chunk usage), and count each chunk's output tokens from it (default false:
    /// one token per chunk that carries one). Chat and completions streams only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuous_usage: Option<bool>,
    /// Free-form fields added to every request body as written (`chat_template_kwargs`, …).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// A minijinja template of the whole request body (`model`, `prompt`, `messages`, every setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_template: Option<String>,
}

/// `[report]`: the default pivot of `perfplan report`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// The metric names of the pivot's cells, or a preset: `"evalscope"` prints
    /// EvalScope perf's summary and percentile table per run.
    #[serde(default, skip_serializing_if = "ReportMetrics::is_empty")]
    pub metrics: ReportMetrics,
    /// The width of each run's time slices (`"1s"`, the default; 10 ms to 1 h), which
    /// `perfplan report --slices` and the HTML report draw; a run's steady-state window
    /// shorter than two slices has no `*_steady` metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "10ms", "x-duration-maximum" = "1h"))]
    pub slice: Option<HumanDuration>,
    /// The clock of the report's answer times: `"kernel"` (the default: when the bytes
    /// arrived, by the kernel's receive stamps where the run had them) or `"user"` (when
    /// the client read them: the metrics recomputed from the rows). Not part of run ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<crate::record::Clock>,
}

/// `[report] metrics`: metric names, or a preset's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ReportMetrics {
    Names(Vec<String>),
    Preset(crate::metrics::presets::Preset),
}

impl Default for ReportMetrics {
    fn default() -> ReportMetrics {
        ReportMetrics::Names(Vec::new())
    }
}

impl ReportMetrics {
    pub fn is_empty(&self) -> bool {
        matches!(self, ReportMetrics::Names(n) if n.is_empty())
    }

    /// The metric names written (none for a preset, whose names are the vocabulary's).
    pub fn names(&self) -> &[String] {
        match self {
            ReportMetrics::Names(n) => n,
            ReportMetrics::Preset(_) => &[],
        }
    }
}

/// The default width of a run's time slices.
pub(crate) const DEFAULT_SLICE: Duration = Duration::from_secs(1);
/// The narrowest and widest `[report] slice` (the schema's range, which validation
/// checks; `perfplan report --slice` checks this copy).
pub(crate) const SLICE_RANGE: (Duration, Duration) =
    (Duration::from_millis(10), Duration::from_secs(3600));

impl ReportSpec {
    /// The width of the runs' time slices (`slice`, or the default).
    pub(crate) fn slice_width(&self) -> Duration {
        self.slice.map_or(DEFAULT_SLICE, |s| s.0)
    }
}
