//! What the verdict's rules read of a run's summary, one rule for a live run and a
//! merged one: the counts behind its metrics, and its client-bound flag as a typed
//! warning (its severity by `Thresholds::client_bound_severity`), and the warnings of its
//! record counts (truncated streams, successes with no output).

use super::code::Code;
use super::judge::RunFacts;
use super::thresholds::Thresholds;
use super::warning::RunWarning;
use crate::metrics::RunSummary;

/// The facts a summary gives: its values, measured requests, failures and estimates.
pub fn facts(summary: &RunSummary) -> RunFacts<'_> {
    RunFacts {
        values: Some(&summary.values),
        requests: summary.requests,
        failed: summary.failures.values().sum(),
        estimated: summary.estimated_input.max(summary.estimated_output),
        ..RunFacts::default()
    }
}

/// The run's `client_bound` reason, if its summary flags one.
pub fn client_bound(summary: &RunSummary, trust: &Thresholds) -> Option<RunWarning> {
    let why = summary.client_bound.as_ref()?;
    let severity = trust.client_bound_severity(&summary.values);
    Some(
        RunWarning::new(
            Code::ClientBound,
            format!(
                "{why}; the client, not the server, held the run back: give perfplan more \
                 CPU (or a machine of its own), fewer streams per process (`--shard`), or \
                 raise [trust] lateness_p99 / client_cpu_share / client_wait_share if this is known"
            ),
        )
        .with_severity(severity),
    )
}

/// Warnings about the records themselves: truncated streams, successes with no output
/// (estimated counts are a reason the verdict's rules give).
pub(crate) fn record_warnings(summary: &RunSummary) -> Vec<RunWarning> {
    let mut out = Vec::new();
    if summary.truncated > 0 {
        out.push(RunWarning::new(
            Code::Truncated,
            format!(
                "{} streams ended with [DONE] but no finish_reason (cut short?)",
                summary.truncated
            ),
        ));
    }
    if summary.no_output > 0 {
        out.push(RunWarning::new(
            Code::NoOutput,
            format!(
                "{} successful requests carried no output at all (no content, reasoning or \
                 tool call): they count as successes without a TTFT; check the server's log \
                 and the request's stop, max_tokens and template settings",
                summary.no_output
            ),
        ));
    }
    out
}
