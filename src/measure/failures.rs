//! The warning of a run in which some, not all, measured requests failed: how many, by
//! class, and the first error, so a partly failed run never passes as a clean one (a run
//! where every request failed is a failed run instead: `all_failed`). Pure text from
//! the run's summary and its first errors.

use crate::metrics::failures::{describe, failure_classes};
use crate::metrics::RunSummary;

/// Characters of the first error kept in the warning.
const ERROR_CHARS: usize = 200;

/// "12 of 40 measured requests failed: 8 http_500, 4 stream_broken; first: <error>",
/// when some but not all measured requests failed.
pub(crate) fn partial_failure_warning(
    summary: &RunSummary,
    errors: &super::tally::FirstErrors,
) -> Option<String> {
    let failed: u64 = summary.failures.values().sum();
    if failed == 0 || failed >= summary.requests {
        return None;
    }
    let classes = failure_classes(&summary.failures, &summary.http_statuses);
    let first = errors.failure.clone().unwrap_or_default();
    let first = if first.chars().count() > ERROR_CHARS {
        format!("{}…", first.chars().take(ERROR_CHARS).collect::<String>())
    } else {
        first
    };
    Some(format!(
        "{failed} of {} measured requests failed: {}; first: {first}",
        summary.requests,
        describe(&classes)
    ))
}

/// "every measured request failed (4 connect): <first error>", when that is the case.
pub(crate) fn all_failed(
    summary: &RunSummary,
    errors: &super::tally::FirstErrors,
) -> Option<String> {
    let ok = summary
        .values
        .get("requests_ok")
        .copied()
        .flatten()
        .unwrap_or(0.0);
    if summary.requests == 0 || ok > 0.0 {
        return None;
    }
    let classes: Vec<String> = summary
        .failures
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let first = errors.error.clone().unwrap_or_default();
    Some(format!(
        "every measured request failed ({}): {first}",
        classes.join(", ")
    ))
}
