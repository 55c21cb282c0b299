//! The metrics of a merged run, recomputed from the union of its shards' request rows by
//! the runner's own `metrics::summarize`; plus what rows cannot give: the server's cache
//! counters over every shard's pass, per-turn metrics of multi-turn runs, client CPU.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::distribute::inputs::Input;
use crate::metrics::{summarize, MetricDefinitions, RunSummary, SummaryOptions};
use crate::plan::ServerMetricsSpec;
use crate::store::{RequestRow, StoredRun};
use crate::telemetry::{first_ratio, CounterNames};

/// Multi-turn runs: the per-turn metrics over every shard's rows. Items are numbered per
/// shard, so each shard's `turn_of_item` is appended and its rows' items moved past the
/// earlier shards' (in memory only).
pub(super) fn turn_values(
    inputs: &[Input],
    parts: &[(usize, StoredRun)],
    rows: &[RequestRow],
) -> Vec<(&'static str, Option<f64>)> {
    let mut turns: Vec<u32> = Vec::new();
    let mut first_item: BTreeMap<String, u64> = BTreeMap::new();
    for (i, run) in parts {
        let Some(list) = run.extras.get("turn_of_item").and_then(Value::as_array) else {
            continue;
        };
        first_item.insert(inputs[*i].shard.to_string(), turns.len() as u64);
        turns.extend(list.iter().map(|t| t.as_u64().unwrap_or(0) as u32));
    }
    if first_item.is_empty() {
        return Vec::new();
    }
    let records: Vec<_> = rows
        .iter()
        .map(|r| {
            let mut rec = r.to_record();
            let base = r.shard.as_ref().and_then(|s| first_item.get(s)).copied();
            rec.item += base.unwrap_or(0);
            rec
        })
        .collect();
    crate::suite::conversation::turn_metrics(&records, &turns)
}

/// The server's cache-hit ratio over every shard's pass: counters are the server's own,
/// so the earliest `before` and the latest `after` scrape bracket all shards' requests.
pub(super) fn server_ratio(
    run: &StoredRun,
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> Option<f64> {
    let spec = run
        .settings
        .pointer("/endpoint/spec/metrics")
        .cloned()
        .and_then(|v| serde_json::from_value::<ServerMetricsSpec>(v).ok());
    first_ratio(before, after, &CounterNames::candidates(spec.as_ref()))
}

/// Every metric of the merged run, from its rows, as the runner computes them.
pub(super) fn summarize_rows(
    first: &StoredRun,
    parts: &[(usize, StoredRun)],
    rows: &[RequestRow],
    slos: &[crate::metrics::Slo],
    server_cache_hit_ratio: Option<f64>,
) -> RunSummary {
    let definitions = first
        .extras
        .get("metric_definitions")
        .and_then(Value::as_str)
        .and_then(MetricDefinitions::parse)
        .unwrap_or(MetricDefinitions::Perfplan);
    let spec = first.settings.pointer("/dataset/spec");
    let per_request = ["batch_size", "num_documents"]
        .iter()
        .find_map(|k| spec.and_then(|s| s.get(*k)).and_then(Value::as_u64));
    let carried = |name: &str| -> Option<f64> {
        parts
            .iter()
            .filter_map(|(_, r)| r.metrics.get(name).copied().flatten())
            .reduce(f64::max)
    };
    let opts = SummaryOptions {
        definitions,
        slos: slos.to_vec(),
        inputs_per_request: per_request.map(|k| k as u32),
        server_cache_hit_ratio,
        planned_prefix_share: carried("planned_prefix_share"),
        ..SummaryOptions::default()
    };
    let records: Vec<_> = rows.iter().map(RequestRow::to_record).collect();
    let mut summary = summarize(&records, &opts);
    // Client CPU and lateness are each machine's own: the busiest shard's CPU figure
    // stands for the merge, and the verdict is the worst shard's (`shard_facts`), not one
    // of the union's lateness, which mixes the shards' clients.
    summary
        .values
        .insert("client_cpu_ratio".into(), carried("client_cpu_ratio"));
    summary.client_bound = None;
    summary
}
