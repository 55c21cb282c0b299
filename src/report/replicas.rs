//! `perfplan report --by-replica`: every run's metrics broken down by the replica (`urls`
//! of its endpoint, or a simulator's `replicas`) each request went to, as CSV. Each
//! replica's measured rows are folded by the one metric fold (`metrics::Fold`), so any
//! metric of the vocabulary can be asked for; rates count over that replica's own
//! requests (first send to last end). Runs of one-URL endpoints have no replica rows.
//!
//! Columns: `run`, `replica` (0-based, in the order of `urls`), `url` (from the run's
//! facts; empty in a database that did not keep it), `requests`, then the metrics
//! (default [`DEFAULT_METRICS`]; durations in ms, as everywhere in CSV).

use std::collections::BTreeMap;

use super::ReportError;
use crate::metrics::{Fold, MetricDefinitions, SummaryOptions};
use crate::store::Store;

/// The metrics of each replica's row when `--metrics` names none.
pub(crate) const DEFAULT_METRICS: [&str; 6] = [
    "requests_ok",
    "requests_failed",
    "rps",
    "ttft_p50",
    "ttft_p99",
    "cache_hit_ratio",
];

/// Every run's per-replica rows, the metrics of `metrics` (empty: the defaults).
/// On the user clock (`clock`) each row is moved to when the client read it.
pub(crate) fn render_csv(
    store: &Store,
    metrics: &[String],
    clock: crate::record::Clock,
) -> Result<String, ReportError> {
    let metrics = super::csv::breakdown_metrics("--by-replica", metrics, &DEFAULT_METRICS)?;
    let mut out = format!("run,replica,url,requests,{}\n", metrics.join(","));
    for run in store.runs()? {
        let definitions = MetricDefinitions::of_facts(&run.facts);
        let urls: Vec<&str> = (run.facts.replicas.iter().flatten())
            .map(String::as_str)
            .collect();
        let mut folds: BTreeMap<u32, (u64, Fold)> = BTreeMap::new();
        store.each_measured_row_by_end(&run.id, |mut row| {
            if clock == crate::record::Clock::User {
                row.record.move_to_user_clock();
            }
            if let Some(r) = row.record.replica {
                let (n, fold) = folds
                    .entry(r)
                    .or_insert_with(|| (0, Fold::new(definitions, &[])));
                *n += 1;
                fold.add(&row.record);
            }
        })?;
        let opts = SummaryOptions {
            definitions,
            ..SummaryOptions::default()
        };
        for (replica, (n, fold)) in folds {
            let summary = fold.finish(&opts);
            let url = urls.get(replica as usize).copied().unwrap_or_default();
            let mut fields = vec![run.id.clone(), replica.to_string(), url.to_string()];
            fields.push(n.to_string());
            for m in &metrics {
                fields.push(super::csv::cell(summary.values.get(m).copied().flatten()));
            }
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    Ok(out)
}
