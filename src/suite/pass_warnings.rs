//! The warnings of a run's measured pass once its load has ended: the dataset's notes
//! met while building requests, a sharded duration-only load that ran out of requests,
//! and a closed loop whose measured requests opened new connections although the run's
//! were opened before its clock (how many, how long, how many TLS handshakes resumed).
//! Knows the run's output, source and summary.

use crate::engine::RunOutput;
use crate::metrics::RunSummary;
use crate::planner::{self, RunSpec};
use crate::trust::warning::all_as;
use crate::trust::{Code, RunWarning};
use crate::workload::prepare::PreparedRun;

/// The dataset's notes met while building, and the sharded request cap reached.
pub(super) fn after_load(
    source: &mut crate::workload::traffic::Source,
    prepared: &PreparedRun,
    output: &RunOutput,
) -> Vec<RunWarning> {
    let mut out = all_as(Code::Dataset, source.finish_building());
    out.extend(all_as(
        Code::Load,
        cap_warning(prepared.duration_cap, source, output),
    ));
    out
}

/// A closed loop whose connections were opened before the clock, yet whose measured
/// requests opened more: the server closed kept-alive connections (or one failed). How
/// many, how long they took, and how many TLS handshakes resumed a session. (An
/// exploring load opens its connections as it grows: not judged.)
pub(super) fn reconnects(
    run: &RunSpec,
    output: &RunOutput,
    summary: &RunSummary,
) -> Option<String> {
    let closed = matches!(
        run.load(),
        planner::Load::Closed { .. } | planner::Load::ClosedRamp { .. }
    );
    let c = summary.connections;
    if !closed || output.preconnect.is_none() || c.opened == 0 {
        return None;
    }
    let value = |k: &str| summary.values.get(k).copied().flatten().unwrap_or(0.0);
    let tls = match c.tls_handshakes {
        0 => String::new(),
        n => format!(
            "; TLS handshakes {} resumed of {n}, mean {:.1} ms (tls_handshake_*)",
            c.tls_resumed,
            value("tls_handshake_mean")
        ),
    };
    Some(format!(
        "{} measured requests opened a new connection although the run's connections were opened before its clock: the server closed kept-alive connections (a keep-alive timeout or a request limit per connection); their setup took {:.1} ms on average, {:.1} ms at most (connect_*), kept out of TTFT{tls}",
        c.opened,
        value("connect_mean"),
        value("connect_max"),
    ))
}

/// A sharded duration-only load whose prepared requests (or turns) ran out before its
/// duration.
fn cap_warning(
    cap: Option<usize>,
    source: &crate::workload::traffic::Source,
    output: &RunOutput,
) -> Option<String> {
    let cap = cap?;
    let ran_out = match source {
        crate::workload::traffic::Source::Conversations(c) => c.used_all_turns(),
        _ => !output.stopped_by_duration,
    };
    (ran_out && !output.cancelled).then(|| {
        format!(
            "request limit reached ({cap} requests for the whole run, this shard sending its \
             share of them): a sharded run builds a duration-only load's requests before it \
             starts, and this shard sent all of its share before the duration ended; give the \
             load `requests`, or run it unsharded (no limit)"
        )
    })
}
