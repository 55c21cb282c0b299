//! `compare` respects the verdicts: a change is never called "beyond noise" when either
//! side is invalid for a reason that touches the metric (a cache leak touches TTFT and
//! throughput; a client-bound run every timing); the comparison says why instead.

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
