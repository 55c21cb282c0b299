//! `[trust]`: the thresholds of the run verdict, as written. Every key is optional and
//! range-checked (the schema's ranges, which validation reads); the book's verdict table
//! (reports/trust.md) and range table (plan/validation.md) list each key with its
//! default, which lives in `trust::Thresholds`. Not part of any
//! run's settings: a threshold changes how a run is judged, never what it sends, so run
//! ids do not move.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::HumanDuration;

/// `[trust]`: how a run's verdict is judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustSpec {
    /// A `suspect` run fails its gates too (default false: suspect passes with a note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Reason codes shown but not weighed (`["counts_estimated"]`); `--accept` adds more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept: Vec<String>,
    /// A request's output usage and the client's own count of what it received may differ
    /// by this share of the larger (default 0.05) …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub token_tolerance: Option<f64>,
    /// … or by this many tokens, whichever is more (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1_000_000))]
    pub token_slack: Option<u32>,
    /// More than this share of checked requests disagreeing: `tokens_not_conserved` (default 0.01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub token_mismatch_share: Option<f64>,
    /// A streamed answer whose tokens after the first arrived faster than one per this
    /// time came in one burst (default "0.1ms").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "1s"))]
    pub burst_token_gap: Option<HumanDuration>,
    /// Only answers of at least this many output tokens are checked for bursts (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 2, max = 10_000_000))]
    pub burst_min_tokens: Option<u32>,
    /// More than this share of checked answers in bursts (or of successes answered with a
    /// whole body to a streamed request): `stream_not_observed` (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub burst_share: Option<f64>,
    /// More than this share of measured requests failed: `failures` (default 0.01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_failed_share: Option<f64>,
    /// More than this share of successes without server usage: `counts_estimated` (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_estimated_share: Option<f64>,
    /// Requests the server may count beyond this client's before `server_not_alone` (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1_000_000_000))]
    pub foreign_requests: Option<u64>,
    /// Send lateness p99 above this: `client_bound` (default "5ms").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "1h"))]
    pub lateness_p99: Option<HumanDuration>,
    /// Client CPU above this share of its cores: `client_bound` (default 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub client_cpu_share: Option<f64>,
    /// The thread driving the requests waiting for a CPU this share of the run or more:
    /// `client_bound` (default 0.25; twice it, invalid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub client_wait_share: Option<f64>,
    /// A cold run's hit ratio above its planned share by more than this: `cache_leak` (default 0.15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub cache_leak_margin: Option<f64>,
    /// A cache-on run's hit ratio below its planned share by more than this:
    /// `cache_shortfall` (default 0.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub cache_shortfall_margin: Option<f64>,
}

impl TrustSpec {
    pub(crate) fn is_default(&self) -> bool {
        *self == TrustSpec::default()
    }
}

impl TrustSpec {
    /// The thresholds this table sets, the rest at their defaults; `accept` codes that
    /// name no reason are skipped here (validation reports them).
    pub(crate) fn thresholds(&self) -> crate::trust::Thresholds {
        let d = crate::trust::Thresholds::default();
        let ms =
            |h: Option<HumanDuration>, default: f64| h.map_or(default, |h| h.0.as_secs_f64() * 1e3);
        crate::trust::Thresholds {
            strict: self.strict.unwrap_or(d.strict),
            accept: self
                .accept
                .iter()
                .filter_map(|c| crate::trust::Code::parse(c))
                .collect(),
            token_tolerance: self.token_tolerance.unwrap_or(d.token_tolerance),
            token_slack: self.token_slack.unwrap_or(d.token_slack),
            token_mismatch_share: self.token_mismatch_share.unwrap_or(d.token_mismatch_share),
            burst_token_gap_ms: ms(self.burst_token_gap, d.burst_token_gap_ms),
            burst_min_tokens: self.burst_min_tokens.unwrap_or(d.burst_min_tokens),
            burst_share: self.burst_share.unwrap_or(d.burst_share),
            max_failed_share: self.max_failed_share.unwrap_or(d.max_failed_share),
            max_estimated_share: self.max_estimated_share.unwrap_or(d.max_estimated_share),
            foreign_requests: self.foreign_requests.unwrap_or(d.foreign_requests),
            lateness_p99_ms: ms(self.lateness_p99, d.lateness_p99_ms),
            client_cpu_share: self.client_cpu_share.unwrap_or(d.client_cpu_share),
            client_wait_share: self.client_wait_share.unwrap_or(d.client_wait_share),
            cache_leak_margin: self.cache_leak_margin.unwrap_or(d.cache_leak_margin),
            cache_shortfall_margin: self
                .cache_shortfall_margin
                .unwrap_or(d.cache_shortfall_margin),
        }
    }
}

/// `[trust] accept` entries that name no verdict reason, each located with the nearest code.
pub fn problems(spec: &TrustSpec, tree: &super::node::Node) -> Vec<super::diag::Diagnostic> {
    use super::node::Step;
    let mut out = Vec::new();
    for (i, code) in spec.accept.iter().enumerate() {
        if crate::trust::Code::parse(code).is_some() {
            continue;
        }
        let at = tree.locate(&[
            Step::Key("trust".into()),
            Step::Key("accept".into()),
            Step::Index(i),
        ]);
        let mut d = super::diag::Diagnostic::error(
            format!("[trust] accept: `{code}` is not the code of a verdict reason"),
            Some(at),
        );
        let names = crate::trust::Code::ALL.iter().map(|c| c.as_str());
        if let Some(s) = crate::suggest::nearest(code, names) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        out.push(d);
    }
    out
}
