//! Run health as every exporter shows it: failed measured requests by class (HTTP split
//! by status), the `client_bound` reason, warnings and the error of a failed run, read
//! from what the suite stored with each run (facts, warnings, error). Knows the stored
//! run, not how the suite found these facts.

use std::collections::BTreeMap;

use super::pivot::Labels;
use super::ReportData;
use crate::metrics::failures::{describe, failure_classes};
use crate::store::StoredRun;

/// The health of one stored run.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RunHealth {
    /// Measured requests, when the run stored the count.
    pub requests: Option<u64>,
    /// Failed measured requests; `None` for a run that stored no count (not run yet).
    pub failed: Option<u64>,
    /// Failed measured requests by class (`http_500`, `stream_broken`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Why the client, not the server, limited the run.
    pub client_bound: Option<String>,
    /// Measured requests the client cancelled (the load's `cancel`, a stop, Ctrl-C):
    /// not among `failed`.
    pub cancelled: u64,
}

impl RunHealth {
    /// Reads a run's facts (`requests`, `failures`, `http_statuses`, `client_bound`),
    /// falling back to its metrics and warnings where an older run lacks them.
    pub fn of(run: &StoredRun) -> RunHealth {
        let facts = &run.facts;
        let mut by_outcome = facts.failures.clone().unwrap_or_default();
        let cancelled = by_outcome
            .remove(crate::record::Outcome::Cancelled.as_str())
            .unwrap_or(0);
        let statuses: BTreeMap<u16, u64> = (facts.http_statuses.iter().flatten())
            .filter_map(|(k, v)| Some((k.parse::<u16>().ok()?, *v)))
            .collect();
        let failures = failure_classes(&by_outcome, &statuses);
        let metric = |name: &str| run.metrics.get(name).copied().flatten();
        let failed = match facts.failures {
            Some(_) => Some(by_outcome.values().sum()),
            None => metric("requests_failed").map(|v| v.max(0.0) as u64),
        };
        let requests = facts.requests.or_else(|| {
            Some(metric("requests_ok")? + metric("requests_failed")?).map(|v| v.max(0.0) as u64)
        });
        let client_bound = (facts.client_bound().map(str::to_string)).or_else(|| {
            run.warnings
                .iter()
                .find(|w| w.code == crate::trust::Code::ClientBound)
                .map(|w| w.text.clone())
        });
        RunHealth {
            requests,
            failed,
            failures,
            client_bound,
            cancelled,
        }
    }

    /// `12 of 40 failed: 8 http_500, 4 stream_broken`, with the requests the client
    /// cancelled apart (`none failed; 6 of 40 cancelled by the client`); `None` when
    /// nothing failed or was cancelled.
    pub(crate) fn failures_text(&self) -> Option<String> {
        let of = self.requests.map_or(String::new(), |n| format!(" of {n}"));
        let cancelled = match self.cancelled {
            0 => String::new(),
            n => format!("{n}{of} cancelled by the client"),
        };
        let Some(failed) = self.failed.filter(|&n| n > 0) else {
            return Some(cancelled)
                .filter(|c| !c.is_empty())
                .map(|c| format!("none failed; {c}"));
        };
        let classes = if self.failures.is_empty() {
            String::new()
        } else {
            format!(": {}", describe(&self.failures))
        };
        let and = if cancelled.is_empty() {
            String::new()
        } else {
            format!("; {cancelled}")
        };
        Some(format!("{failed}{of} failed{classes}{and}"))
    }
}

/// A merged run's shards (`perfplan merge` keeps them in its facts): how closely they
/// started it, and each shard's client (CPU, send lateness p99, `client_bound`); empty
/// for a run of one machine.
pub(crate) fn shard_lines(run: &StoredRun) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(starts) = &run.facts.shard_starts {
        if let Some(start) = starts.start_spread_ms {
            let first = match starts.first_measured_spread_ms {
                Some(f) => format!(", first measured requests within {f:.1} ms"),
                None => " (less each shard's lead into the run's arrivals)".into(),
            };
            lines.push(format!("shards: started within {start:.1} ms{first}"));
        }
    }
    let Some(clients) = &run.facts.client_by_shard else {
        return lines;
    };
    let each: Vec<String> = clients
        .iter()
        .map(|c| {
            let shard = &c.shard;
            let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".into(), f);
            let cpu = num(c.client_cpu_ratio, &|v| format!("{v:.2}"));
            let late = num(c.lateness_p99, &|v| format!("{v:.1} ms"));
            let bound = match &c.client_bound {
                Some(_) => ", client_bound",
                None => "",
            };
            format!("{shard} cpu {cpu} lateness p99 {late}{bound}")
        })
        .collect();
    lines.push(format!("client by shard: {}", each.join("; ")));
    lines
}

/// One run's health as labelled lines: its failures, error and warnings (`client_bound`
/// among them); empty for a healthy run.
pub struct HealthEntry {
    /// `#3 <id> endpoint=a concurrency=8`.
    pub run: String,
    pub lines: Vec<String>,
}

/// Every run with something to say, in ordinal order.
pub fn entries(data: &ReportData) -> Vec<HealthEntry> {
    let labels = Labels::new(&data.runs);
    data.runs
        .iter()
        .filter_map(|run| {
            let health = RunHealth::of(run);
            let mut lines: Vec<String> = health
                .failures_text()
                .map(|f| format!("failures: {f}"))
                .into_iter()
                .collect();
            lines.extend(shard_lines(run));
            lines.extend(run.error.iter().map(|e| format!("error: {e}")));
            // Reasons of the verdict are shown with it, before the table.
            let notes = run.warnings.iter().filter(|w| !w.is_reason());
            lines.extend(notes.map(|w| format!("warning: {w}")));
            if lines.is_empty() {
                return None;
            }
            Some(HealthEntry {
                run: format!("#{} {} {}", run.ordinal, run.id, labels.run(run)),
                lines,
            })
        })
        .collect()
}

/// The health section of the terminal table; empty when every run is healthy.
pub fn text(data: &ReportData) -> String {
    let mut out = String::new();
    for entry in entries(data) {
        if out.is_empty() {
            out.push_str("\nrun health\n");
        }
        out.push_str(entry.run.trim_end());
        out.push('\n');
        for line in &entry.lines {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// The health section in Markdown; empty when every run is healthy.
pub fn markdown(data: &ReportData) -> String {
    let mut out = String::new();
    for entry in entries(data) {
        if out.is_empty() {
            out.push_str("\n### run health\n\n");
        }
        out.push_str(&format!("- **{}**\n", md_escape(entry.run.trim_end())));
        for line in &entry.lines {
            out.push_str(&format!("  - {}\n", md_escape(line)));
        }
    }
    out
}

fn md_escape(text: &str) -> String {
    text.replace('\n', " ")
        .replace('<', "&lt;")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunStatus;
    use serde_json::{json, Value};

    /// A run whose facts were stored as `extras` (as an older perfplan wrote them).
    fn run(extras: Value, warnings: Vec<String>) -> StoredRun {
        StoredRun {
            id: "r1".into(),
            ordinal: 1,
            axes: json!({}),
            settings: json!({}),
            status: RunStatus::Done,
            started_unix_ms: None,
            finished_unix_ms: None,
            warnings: warnings
                .iter()
                .map(|w| crate::trust::RunWarning::from_legacy(w))
                .collect(),
            facts: crate::record::RunFacts::from_value(extras),
            error: None,
            metrics: BTreeMap::new(),
            verdict: Default::default(),
        }
    }

    #[test]
    fn health_reads_classes_statuses_and_client_bound() {
        let r = run(
            json!({"requests": 40, "failures": {"http": 8, "stream_broken": 4},
                   "http_statuses": {"500": 8}, "client_bound": "lateness p99 12 ms"}),
            vec![],
        );
        let h = RunHealth::of(&r);
        assert_eq!(h.failed, Some(12));
        assert_eq!(h.client_bound.as_deref(), Some("lateness p99 12 ms"));
        assert_eq!(
            h.failures_text().as_deref(),
            Some("12 of 40 failed: 8 http_500, 4 stream_broken")
        );
        let healthy = run(json!({"requests": 3, "failures": {}}), vec![]);
        assert_eq!(RunHealth::of(&healthy).failures_text(), None);
        let old = run(json!({}), vec!["client_bound: cpu".into()]);
        assert_eq!(RunHealth::of(&old).client_bound.as_deref(), Some("cpu"));
        assert_eq!(RunHealth::of(&old).failed, None);
    }
}
