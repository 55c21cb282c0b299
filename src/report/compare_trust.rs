//! `compare` respects the verdicts: a change is never called "beyond noise" when either
//! side is invalid for a reason that touches the metric (a cache leak touches TTFT and
//! throughput; a client-bound run every timing); the comparison says why instead. Nor
//! when a side is one exploring run: its figures come from the levels its walk held
//! (`ONE_WALK`).

use crate::store::StoredRun;
use crate::trust::Severity;

/// Why `metric` of this pair is not judged, if a side's verdict forbids it:
/// `new invalid: cache_leak`.
pub(crate) fn why_not_judged(base: &StoredRun, new: &StoredRun, metric: &str) -> Option<String> {
    let side = |name: &str, run: &StoredRun| {
        let codes: Vec<&str> = run
            .verdict
            .touching(metric, Severity::Invalid)
            .iter()
            .map(|r| r.code.as_str())
            .collect();
        (!codes.is_empty()).then(|| format!("{name} invalid: {}", codes.join(", ")))
    };
    let both: Vec<String> = [side("base", base), side("new", new)]
        .into_iter()
        .flatten()
        .collect();
    (!both.is_empty()).then(|| both.join("; "))
}

/// `valid · invalid`: the two sides' verdicts beside a delta.
pub(crate) fn sides(base: &StoredRun, new: &StoredRun) -> String {
    format!("{} · {}", base.verdict.status, new.verdict.status)
}

/// Why a pair with an exploring run on a side and no repeats on both is not judged.
pub(crate) const ONE_WALK: &str = "one exploring run a side: no noise estimate";

/// The note of a comparison with such a pair.
pub(crate) const ONE_WALK_NOTE: &str = "An exploring run's figures (its knee, saturation point, \
goodput, cost, every metric) come from the levels its own walk held, which resampling its \
requests cannot see: a pair with one exploring run a side is not judged for noise. Repeat \
the load (`repeat = 3`) on both sides: its groups are then judged by Welch's t over the \
repeats, as every repeated metric is.";

/// Whether `run` is an exploring load's (its levels chosen by its own walk).
pub(crate) fn exploring(run: &StoredRun) -> bool {
    run.settings.pointer("/load/explore").is_some()
}
