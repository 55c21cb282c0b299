//! `[checks]` as written: golden requests mixed into each run's measured traffic (a share
//! of its measured requests or a fixed number per run), drawn from the built-in golden
//! set or a user's JSONL file, each answer checked against its expected one. The planner
//! copies it into every run's settings (left out when absent, so runs without it keep
//! their ids); `workload` mixes the requests in, `api::golden` checks the answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diag::Diagnostic;
use super::node::{Node, Step};

/// Golden requests: `{ share = 0.05 }` or `{ per_run = 20 }`, optional `path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChecksSpec {
    /// Golden requests as a share of each run's measured requests (0 < share ≤ 1),
    /// rounded up: `0.05` adds 5 to a run of 100. Give this or `per_run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.000001, max = 1))]
    pub share: Option<f64>,
    /// A fixed number of golden requests in each run (1 to 10000). Give this or `share`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub per_run: Option<u32>,
    /// A JSONL file of golden requests (relative to the plan's folder), one per line:
    /// `{"prompt": "...", "expected": {"regex": "\\b42\\b"}}` (or `"messages"`; checks
    /// `exact`, `regex`, `json_schema`, `tool_call`). Default: the built-in set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The output limit of a golden request (default 128): `ignore_eos` and `min_tokens`
    /// are never sent with one, so the model may stop when it has answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65536))]
    pub output_tokens: Option<u32>,
    /// The temperature of golden requests (default 0). At 0 the suite compares each
    /// golden answer across its runs (`answers_changed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2))]
    pub temperature: Option<f64>,
}

/// The output limit of golden requests when `output_tokens` is not set.
pub const DEFAULT_OUTPUT_TOKENS: u32 = 128;

impl ChecksSpec {
    pub fn output_tokens(&self) -> u32 {
        self.output_tokens.unwrap_or(DEFAULT_OUTPUT_TOKENS)
    }

    pub fn temperature(&self) -> f64 {
        self.temperature.unwrap_or(0.0)
    }

    /// Golden requests of a run with `measured` measured requests.
    pub fn count(&self, measured: usize) -> usize {
        match (self.per_run, self.share) {
            (Some(n), _) => n as usize,
            (None, Some(share)) => ((measured as f64) * share).ceil() as usize,
            (None, None) => 0,
        }
    }
}

/// `share` and `per_run`: exactly one of them, located at `[checks]`.
pub fn problems(spec: Option<&ChecksSpec>, tree: &Node) -> Vec<Diagnostic> {
    let Some(c) = spec else {
        return Vec::new();
    };
    let at = |key: &str| {
        let path: Vec<Step> = ["checks", key]
            .iter()
            .map(|s| Step::Key(s.to_string()))
            .collect();
        tree.locate(&path)
    };
    match (c.share, c.per_run) {
        (Some(_), Some(_)) => vec![Diagnostic::error(
            "[checks] gives both `share` and `per_run`",
            Some(at("per_run")),
        )
        .with_help("give one: a share of the measured requests, or a number per run")],
        (None, None) => {
            vec![
                Diagnostic::error("[checks] needs `share` or `per_run`", Some(at(""))).with_help(
                    "`share = 0.05` (5% of each run's measured requests) or `per_run = 20`",
                ),
            ]
        }
        _ => Vec::new(),
    }
}
