//! The reasons a run's own numbers give: the pure rules over its summary values, its
//! evidence and the server's counters. Each rule says what it saw and what to do, with
//! the threshold it used. The cache and client rules live where their inputs are; every
//! rule's warning carries its code.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::code::Code;
use super::evidence::Evidence;
use super::thresholds::Thresholds;
use super::warning::RunWarning;

/// Token and request counts of one side of the server-counter check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    pub prompt_tokens: Option<u64>,
    /// The client's sum of usage (`completion_tokens`); the server's generated tokens.
    #[serde(alias = "generation_tokens")]
    pub completion_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub requests: Option<u64>,
    /// Client side: requests whose usage was summed.
    pub requests_with_usage: Option<u64>,
}

/// The server's counters around a run's pass, and the client's sums over the same
/// requests (the run's facts, `server_counts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerCounts {
    pub server: Counts,
    pub client: Counts,
    pub server_in_flight_max: Option<f64>,
    pub client_in_flight_max: Option<f64>,
}

/// What the rules read of one finished run.
#[derive(Debug, Clone, Default)]
pub struct RunFacts<'a> {
    /// Every metric of the run (`None`: unknown).
    pub values: Option<&'a BTreeMap<String, Option<f64>>>,
    /// Measured requests, and how many of them failed.
    pub requests: u64,
    pub failed: u64,
    /// Successful requests whose input or output count is the client's estimate.
    pub estimated: u64,
    /// The run asked for streamed answers.
    pub streamed: bool,
    /// With `ignore_eos`: the most output tokens any request asked for.
    pub output_limit: Option<u32>,
    pub evidence: Evidence,
    pub server: Option<ServerCounts>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Every reason the rules find, in a fixed order.
pub fn judge(f: &RunFacts<'_>, t: &Thresholds) -> Vec<RunWarning> {
    let mut out = Vec::new();
    out.extend(failures(f, t));
    out.extend(super::judge_stream::stream(f, t));
    out.extend(output_tokens(f, t));
    out.extend(super::judge_server::not_alone(f, t));
    out.extend(super::judge_server::counters(f, t));
    out.extend(estimated(f, t));
    out.extend(super::judge_values::impossible(f));
    out
}

fn failures(f: &RunFacts<'_>, t: &Thresholds) -> Option<RunWarning> {
    if f.requests == 0 || f.failed == 0 || f.failed >= f.requests {
        return None;
    }
    let share = f.failed as f64 / f.requests as f64;
    (share > t.max_failed_share).then(|| {
        RunWarning::new(
            Code::Failures,
            format!(
                "{} of {} measured requests failed ({}, above [trust] max_failed_share = {}): \
                 the timings are of the requests that survived; see the failures and the \
                 server's log, then rerun",
                f.failed,
                f.requests,
                pct(share),
                t.max_failed_share
            ),
        )
    })
}

fn output_tokens(f: &RunFacts<'_>, t: &Thresholds) -> Option<RunWarning> {
    let e = &f.evidence;
    if e.output_checked == 0 || e.output_mismatched == 0 {
        return None;
    }
    let share = e.output_mismatched as f64 / e.output_checked as f64;
    if share <= t.token_mismatch_share {
        return None;
    }
    let example = e.output_example.as_ref().map_or(String::new(), |x| {
        format!(" (request {}: {})", x.request, x.seen)
    });
    Some(RunWarning::new(
        Code::TokensNotConserved,
        format!(
            "{} of {} requests' usage disagrees with the output the client received by more \
             than {} or {} tokens{example}: token counts and throughput come from usage and \
             are wrong; check the server's usage accounting (or a proxy rewriting it), and \
             that the model's tokenizer is the server's",
            e.output_mismatched,
            e.output_checked,
            pct(t.token_tolerance),
            t.token_slack
        ),
    ))
}

fn estimated(f: &RunFacts<'_>, t: &Thresholds) -> Option<RunWarning> {
    let ok = f.requests.saturating_sub(f.failed);
    if ok == 0 || f.estimated == 0 {
        return None;
    }
    let share = f.estimated as f64 / ok as f64;
    (share > t.max_estimated_share).then(|| {
        RunWarning::new(
            Code::CountsEstimated,
            format!(
                "{} of {ok} successful requests carried no usage: their token counts are the \
                 client's tokenizer estimates; ask the server for usage (streamed usage needs \
                 stream_options.include_usage, which perfplan sends unless rejected)",
                f.estimated
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::evidence::Example;

    #[test]
    fn failures_above_the_share_make_the_run_invalid() {
        let t = Thresholds::default();
        let f = |failed| RunFacts {
            requests: 100,
            failed,
            ..RunFacts::default()
        };
        assert!(judge(&f(1), &t).is_empty());
        let w = judge(&f(30), &t);
        assert_eq!(w[0].code, Code::Failures);
        assert!(
            w[0].text
                .starts_with("30 of 100 measured requests failed (30.0%"),
            "{}",
            w[0].text
        );
        // Every request failed: the run failed, which says more than a reason.
        assert!(judge(&f(100), &t).is_empty());
    }

    #[test]
    fn output_mismatches_and_estimates_are_named() {
        let t = Thresholds::default();
        let facts = RunFacts {
            requests: 10,
            estimated: 2,
            evidence: Evidence {
                output_checked: 8,
                output_mismatched: 8,
                output_example: Some(Example {
                    request: 3,
                    seen: "usage says 800 output tokens, the client received 8".into(),
                }),
                ..Evidence::default()
            },
            ..RunFacts::default()
        };
        let w = judge(&facts, &t);
        let codes: Vec<Code> = w.iter().map(|w| w.code).collect();
        assert_eq!(codes, [Code::TokensNotConserved, Code::CountsEstimated]);
        assert!(
            w[0].text.contains("request 3: usage says 800"),
            "{}",
            w[0].text
        );
    }
}
