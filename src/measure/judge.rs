//! A finished run's reasons: its client-bound flag as a typed warning, the verdict rules
//! of `trust` run over its summary, evidence and the server's counters, and the timings
//! a stream that was not observed did not measure, nulled. The verdict itself is judged
//! from the whole list of warnings when the run is stored (`Verdict::judge`).

use serde_json::Value;

use crate::metrics::RunSummary;
use crate::planner::RunSpec;
use crate::request::OutputLen;
use crate::trust::judge_stream::not_measured;
use crate::trust::{self, Code, Evidence, RunFacts, RunWarning, ServerCounts, Thresholds};

/// The most output tokens a request of `run` may get when `ignore_eos` makes the limit
/// exact (`None` otherwise, or with no limit).
fn exact_limit(run: &RunSpec) -> Option<u32> {
    let ignore_eos = run.request.fields.get("ignore_eos") == Some(&Value::Bool(true));
    match run.request.output {
        OutputLen::Fixed(n) if ignore_eos => Some(n),
        OutputLen::Drawn { max, .. } if ignore_eos => Some(max),
        _ => None,
    }
}

/// The server's counters around the run as the verdict's rules read them (the same
/// figures: `telemetry::counts` gathers them, `trust` judges them).
pub(crate) fn trust_counts(
    counts: Option<&crate::telemetry::counts::ServerCounts>,
) -> Option<ServerCounts> {
    serde_json::to_value(counts?)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

/// Adds the verdict's reasons the run's numbers give to `warnings`, and nulls the
/// timings of a run whose stream was not observed.
/// The requests the client cancelled: a stopped run's in flight when it stopped, and
/// those the load's `cancel` aborted.
pub(crate) fn cut_by_stop(summary: &RunSummary) -> u64 {
    let cancelled = crate::record::Outcome::Cancelled.as_str();
    summary.failures.get(cancelled).copied().unwrap_or(0)
}

/// Takes `aborted` requests off the server's most in flight (those the client cancelled,
/// and those held before the run), so that requests the server has not let go of yet
/// are not read as another client's (`server_not_alone`).
pub(crate) fn allow_in_flight(server: Option<&mut ServerCounts>, aborted: f64) {
    if let Some(most) = server.and_then(|s| s.server_in_flight_max.as_mut()) {
        *most = (*most - aborted).max(0.0);
    }
}

pub fn reasons(
    run: &RunSpec,
    summary: &mut RunSummary,
    evidence: &Evidence,
    warnings: &mut Vec<RunWarning>,
    (server, trust, stopped): (Option<ServerCounts>, &Thresholds, bool),
) {
    warnings.extend(trust::of_summary::client_bound(summary, trust));
    let mut facts = RunFacts {
        streamed: run.request.stream,
        output_limit: exact_limit(run),
        evidence: evidence.clone(),
        server,
        ..trust::of_summary::facts(summary)
    };
    if stopped {
        // The requests a stop on saturation or the load's `cancel` cut short are the
        // client's doing, not the server's failures (the `saturated` reason says how
        // many a stop cut; `cancelled_requests` counts them all).
        let cut = cut_by_stop(summary);
        facts.failed = facts.failed.saturating_sub(cut);
        facts.requests = facts.requests.saturating_sub(cut);
    }
    warnings.extend(trust::judge(&facts, trust));
    // Accepted ("this server answers at once, I know"), the timings stand.
    let accepted = trust.accept.contains(&Code::StreamNotObserved);
    if !accepted && warnings.iter().any(|w| w.code == Code::StreamNotObserved) {
        for (name, value) in summary.values.iter_mut() {
            if not_measured(name) {
                *value = None;
            }
        }
    }
}
