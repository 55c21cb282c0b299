//! The warnings of a run's measured pass once its load has ended: the dataset's notes
//! met while building requests, and a sharded duration-only load that ran out of
//! requests (new connections while measuring are `measure::connections`'). Knows the
//! run's output and source.

use crate::engine::RunOutput;
use crate::trust::warning::all_as;
use crate::trust::{Code, RunWarning};

/// The dataset's notes met while building, and the sharded request cap reached (`cap`:
/// `Requests::cap` of the run's requests).
pub(super) fn after_load(
    source: &mut crate::workload::traffic::Source,
    cap: Option<usize>,
    output: &RunOutput,
) -> Vec<RunWarning> {
    let mut out = all_as(Code::Dataset, source.finish_building());
    out.extend(all_as(Code::Load, cap_warning(cap, source, output)));
    out
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
