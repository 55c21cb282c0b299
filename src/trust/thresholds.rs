//! The thresholds a verdict is judged by: the `[trust]` table resolved (its keys, their
//! defaults and ranges are the plan's `TrustSpec`; the book's verdict table lists them).
//! Plain numbers here: this module knows no plan syntax.

use serde::{Deserialize, Serialize};

use super::code::Code;

/// Every threshold of the run verdict. Stored with the suite (merges judge with it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Thresholds {
    /// A `suspect` run fails its gates too.
    pub strict: bool,
    /// Reasons shown but not weighed.
    pub accept: Vec<Code>,
    /// A request's usage and the client's count of what it received may differ by this
    /// share of the client's count …
    pub token_tolerance: f64,
    /// … or by this many tokens, whichever is more.
    pub token_slack: u32,
    /// More than this share of the checked requests disagreeing makes the run invalid.
    pub token_mismatch_share: f64,
    /// A streamed answer of at least `burst_min_tokens` tokens whose tokens arrived
    /// faster than one per this many milliseconds (after the first) arrived in one burst.
    pub burst_token_gap_ms: f64,
    pub burst_min_tokens: u32,
    /// More than this share of such answers in bursts: the stream was not observed.
    pub burst_share: f64,
    /// More than this share of measured requests failed: invalid.
    pub max_failed_share: f64,
    /// More than this share of successes without server usage: suspect.
    pub max_estimated_share: f64,
    /// Requests the server counted beyond the client's before it is not alone.
    pub foreign_requests: u64,
    /// Send lateness p99 above this (ms): client bound, `suspect`; above
    /// `HARD_LATENESS` times this, or with the client's CPU saturated, `invalid`.
    pub lateness_p99_ms: f64,
    /// Client CPU above this share of its cores: client bound.
    pub client_cpu_share: f64,
    /// The thread driving the requests waiting for a CPU this share of the run or more
    /// (another process held its cores): client bound, `suspect`; twice this, `invalid`.
    pub client_wait_share: f64,
    /// A cold run's hit ratio above the planned share by more than this: a leak.
    pub cache_leak_margin: f64,
    /// A cache-on run's hit ratio below the planned share by more than this: a shortfall.
    pub cache_shortfall_margin: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            strict: false,
            accept: Vec::new(),
            token_tolerance: 0.05,
            token_slack: 2,
            token_mismatch_share: 0.01,
            burst_token_gap_ms: 0.1,
            burst_min_tokens: 4,
            burst_share: 0.5,
            max_failed_share: 0.01,
            max_estimated_share: 0.0,
            foreign_requests: 0,
            lateness_p99_ms: 5.0,
            client_cpu_share: 0.9,
            client_wait_share: 0.25,
            cache_leak_margin: 0.15,
            cache_shortfall_margin: 0.10,
        }
    }
}

/// How many times `lateness_p99` makes a client-bound run invalid, not just suspect.
pub(crate) const HARD_LATENESS: f64 = 4.0;

/// How many times `client_wait_share` makes a client-bound run invalid.
pub(crate) const HARD_WAIT: f64 = 2.0;

impl Thresholds {
    /// The severity of a client-bound run: `invalid` when its send lateness p99 is past
    /// `HARD_LATENESS` × the limit or its client's CPU was saturated (over a run of a
    /// second or more, one core being the engine's ceiling), else `suspect` (a few
    /// milliseconds late: the load offered was a little off, each timing still starts
    /// at its own send).
    pub(crate) fn client_bound_severity(
        &self,
        values: &std::collections::BTreeMap<String, Option<f64>>,
    ) -> super::code::Severity {
        let v = |k: &str| values.get(k).copied().flatten();
        let late = v("lateness_p99").is_some_and(|l| l > HARD_LATENESS * self.lateness_p99_ms);
        let long = v("duration_s").is_some_and(|d| d >= 1.0);
        let saturated = long && v("client_cpu_ratio").is_some_and(|c| c >= self.client_cpu_share);
        let starved =
            long && v("client_wait_ratio").is_some_and(|w| w >= HARD_WAIT * self.client_wait_share);
        if late || saturated || starved {
            super::code::Severity::Invalid
        } else {
            super::code::Severity::Suspect
        }
    }

    /// What of these thresholds reports and gates apply later.
    pub(crate) fn policy(&self) -> super::verdict::Policy {
        super::verdict::Policy {
            strict: self.strict,
            accept: self.accept.clone(),
        }
    }

    /// Whether `client` and `server` counts of the same tokens agree: within
    /// `token_tolerance` of the larger, or `token_slack` tokens (`per` requests' worth).
    pub(crate) fn tokens_agree(&self, client: u64, server: u64, per: u64) -> bool {
        let diff = client.abs_diff(server) as f64;
        let allowed = (self.token_tolerance * client.max(server) as f64)
            .max(f64::from(self.token_slack) * per.max(1) as f64);
        diff <= allowed
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_wait_for_the_cpu_makes_client_bound_invalid() {
        let t = Thresholds::default();
        let values = |wait: f64| {
            [("duration_s", 2.0), ("client_wait_ratio", wait)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Some(v)))
                .collect()
        };
        assert_eq!(
            t.client_bound_severity(&values(0.3)),
            super::super::code::Severity::Suspect
        );
        assert_eq!(
            t.client_bound_severity(&values(0.5)),
            super::super::code::Severity::Invalid
        );
    }

    use super::*;

    #[test]
    fn tokens_agree_within_the_tolerance_or_the_slack() {
        let t = Thresholds::default();
        assert!(t.tokens_agree(32, 32, 1));
        assert!(t.tokens_agree(30, 32, 1));
        assert!(!t.tokens_agree(27, 32, 1));
        assert!(t.tokens_agree(1000, 1040, 1));
        assert!(!t.tokens_agree(8, 800, 1));
        assert!(!t.tokens_agree(800, 8, 1));
        assert!(t.tokens_agree(100, 110, 10));
    }
}
