//! The warning of a run in which some, not all, measured requests failed: how many, by
//! class, and the first error, so a partly failed run never passes as a clean one (a run
//! where every request failed is a failed run instead: `all_failed`). Pure text from
//! the run's summary and its first errors.

use crate::metrics::failures::{describe, failure_classes};
use crate::metrics::RunSummary;
use crate::record::Outcome;

/// Characters of the first error kept in the warning.
const ERROR_CHARS: usize = 200;

/// "12 of 40 measured requests failed: 8 http_500, 4 stream_broken; first: <error>",
/// when some but not all measured requests failed. A run whose client cut requests
/// short (`stopped`: a stop on saturation, the load's `cancel`) leaves out the requests
/// it cancelled (a `saturated` reason says how many a stop cut).
pub(crate) fn partial_failure_warning(
    summary: &RunSummary,
    errors: &super::tally::FirstErrors,
    stopped: bool,
) -> Option<String> {
    let mut failures = summary.failures.clone();
    let cut = if stopped {
        failures.remove(Outcome::Cancelled.as_str()).unwrap_or(0)
    } else {
        0
    };
    let failed: u64 = failures.values().sum();
    if failed == 0 || failed + cut >= summary.requests {
        return None;
    }
    let classes = failure_classes(&failures, &summary.http_statuses);
    let first = errors.failure.clone().unwrap_or_default();
    let first = if first.chars().count() > ERROR_CHARS {
        format!("{}…", first.chars().take(ERROR_CHARS).collect::<String>())
    } else {
        first
    };
    Some(format!(
        "{failed} of {} measured requests failed: {}; first: {first}",
        summary.requests - cut,
        describe(&classes)
    ))
}

/// `all_failed`, unless the run was interrupted (`cut.0`) or every measured request was
/// one the client cancelled itself (`cut.1`: the load's `cancel`, a stop on saturation).
pub(crate) fn all_failed_unless_cut(
    summary: &RunSummary,
    errors: &super::tally::FirstErrors,
    (interrupted, client_cut): (bool, bool),
) -> Option<String> {
    let every_one_cut = client_cut && super::judge::cut_by_stop(summary) == summary.requests;
    all_failed(summary, errors).filter(|_| !interrupted && !every_one_cut)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Fold, MetricDefinitions, SummaryOptions};
    use crate::record::{Outcome, Phase, RequestRecord};

    fn summary(outcomes: &[(Outcome, usize)]) -> RunSummary {
        let mut fold = Fold::new(MetricDefinitions::default(), &[]);
        for (outcome, n) in outcomes {
            for _ in 0..*n {
                fold.add(&RequestRecord {
                    phase: Phase::Measured,
                    outcome: *outcome,
                    ..RequestRecord::default()
                });
            }
        }
        fold.finish(&SummaryOptions::default())
    }

    #[test]
    fn a_stopped_run_leaves_out_the_requests_its_stop_cancelled() {
        let errors = super::super::tally::FirstErrors::default();
        let s = summary(&[
            (Outcome::Ok, 6),
            (Outcome::Cancelled, 3),
            (Outcome::Timeout, 1),
        ]);
        let all = partial_failure_warning(&s, &errors, false).unwrap();
        assert!(all.starts_with("4 of 10 measured requests failed"), "{all}");
        let stopped = partial_failure_warning(&s, &errors, true).unwrap();
        assert!(
            stopped.starts_with("1 of 7 measured requests failed"),
            "{stopped}"
        );
        assert!(!stopped.contains("cancel"), "{stopped}");
        let only_cut = summary(&[(Outcome::Ok, 6), (Outcome::Cancelled, 3)]);
        assert_eq!(partial_failure_warning(&only_cut, &errors, true), None);
        assert!(partial_failure_warning(&only_cut, &errors, false).is_some());
    }
}
