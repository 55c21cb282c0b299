//! The flat metric vocabulary of DESIGN.md ("Metric names"), used by `[report]`,
//! `[gates]`, `--metrics`, CSV columns and the JSON output.

use super::registry::{names_of, statistic_names};
use super::registry_defs::{QUANTITY_DEFS, SCALAR_DEFS, SERVER_DEFS};

/// Distributions: `<quantity>_<statistic>` (their units, directions and definitions are
/// the registry's, `registry_defs::QUANTITY_DEFS`, in this order).
pub(crate) const QUANTITIES: [&str; QUANTITY_DEFS.len()] = names_of(&QUANTITY_DEFS);

/// The statistics of every distribution, in column order.
pub(crate) const STATISTICS: [&str; 14] = statistic_names();

/// Scalars, one value per run (`registry_defs::SCALAR_DEFS`).
pub(crate) const SCALARS: [&str; SCALAR_DEFS.len()] = names_of(&SCALAR_DEFS);

/// Scalars of the server's side: telemetry scraped during the run (null without it;
/// the book, metrics/telemetry.md), which no request row holds (a merged or pooled run
/// carries them, never recomputes them). They follow `SCALARS` in every export
/// (`registry_defs::SERVER_DEFS`).
pub const SERVER_SCALARS: [&str; SERVER_DEFS.len()] = names_of(&SERVER_DEFS);

/// Every scalar: `SCALARS`, then `SERVER_SCALARS`.
pub fn scalars() -> impl Iterator<Item = &'static str> {
    SCALARS.iter().chain(SERVER_SCALARS.iter()).copied()
}

/// The unit of a distribution's quantity (`ttft`), from the registry.
fn quantity_unit(quantity: &str) -> Option<super::registry::MetricUnit> {
    QUANTITY_DEFS
        .iter()
        .find(|q| q.name == quantity)
        .map(|q| q.unit)
}

/// The distributions measured in tokens per second.
pub fn is_rate_quantity(quantity: &str) -> bool {
    quantity_unit(quantity) == Some(super::registry::MetricUnit::TokensPerSec)
}

/// Quantities measured in milliseconds (in JSON and CSV).
pub fn is_time_quantity(quantity: &str) -> bool {
    quantity_unit(quantity) == Some(super::registry::MetricUnit::Millis)
}

/// Every metric name, distributions first, in a fixed order.
pub fn all_names() -> Vec<String> {
    let mut names = Vec::with_capacity(
        QUANTITIES.len() * STATISTICS.len() + SCALARS.len() + SERVER_SCALARS.len(),
    );
    for q in QUANTITIES {
        for s in STATISTICS {
            names.push(format!("{q}_{s}"));
        }
    }
    names.extend(scalars().map(str::to_string));
    names
}

/// A mix class's value of metric `name`: `NAME@CLASS` (`ttft_p99@rag`), stored beside
/// the run's own metrics and read by gates and reports under that name.
pub fn class_metric(name: &str, class: &str) -> String {
    format!("{name}@{class}")
}

/// Whether `name` may name a class (it follows `@` in a class's metric names).
pub(crate) fn valid_class_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A metric name split into the vocabulary's name and the mix class it is of, if any.
pub(crate) fn split_class(metric: &str) -> (&str, Option<&str>) {
    match metric.split_once('@') {
        Some((name, class)) => (name, Some(class)),
        None => (metric, None),
    }
}

/// Whether `name` is a run's stored metric: one of the vocabulary, or a mix class's
/// (`NAME@CLASS`, a valid class name after a metric of the vocabulary).
pub(crate) fn is_metric_or_class(name: &str) -> bool {
    match split_class(name) {
        (metric, Some(class)) => valid_class_name(class) && is_metric(metric),
        (metric, None) => is_metric(metric),
    }
}

/// Whether `name` is in the vocabulary.
pub fn is_metric(name: &str) -> bool {
    if scalars().any(|s| s == name) {
        return true;
    }
    QUANTITIES.iter().any(|q| {
        name.strip_prefix(q)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|stat| STATISTICS.contains(&stat))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_is_consistent() {
        let names = all_names();
        assert_eq!(
            names.len(),
            QUANTITIES.len() * 14 + SCALARS.len() + SERVER_SCALARS.len()
        );
        assert!(is_metric("chunk_gap_p99") && is_time_quantity("chunk_gap"));
        assert!(is_metric("tokens_per_chunk_mean") && is_metric("answer_tps"));
        assert!(is_metric("reasoning_tokens_p50") && is_metric("answer_tokens_max"));
        assert!(is_metric("decode_tps_p99") && !is_time_quantity("decode_tps"));
        assert!(is_metric("ttft_p99_steady") && is_metric("steady_s"));
        assert!(is_metric("connect_p99"));
        assert!(is_metric("tls_handshake_p99") && is_time_quantity("tls_handshake"));
        assert!(is_metric("ttfo_p99") && is_time_quantity("ttfo"));
        assert!(is_metric("requests_no_output"));
        assert!(names.iter().all(|n| is_metric(n)));
        assert!(is_metric("ttft_p99"));
        assert!(is_metric("cached_tokens_mean"));
        assert!(!is_metric("ttft_p98"));
        assert!(!is_metric("tokens_mean"));
    }
}
