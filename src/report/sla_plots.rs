//! The SLA-search section of the HTML report: one row per search (highest passing value,
//! or the best one of a search with an objective; first failing value, the metric that
//! failed) and, per searched variable and SLO
//! metric, the probes' pooled values against the probed load with the SLO as a line.
//! Reads the `searches` and `search_steps` tables only.

use std::fmt::Write;

use super::format::number;
use super::pivot::Labels;
use super::svg::{escape, Chart, Series};
use super::ReportError;
use crate::metrics::condition::{parse_condition, unit_of, MetricUnit, Threshold};
use crate::store::{SearchRow, SearchStepRow, Store, StoredRun};

/// A search with its steps and the label of its run.
struct Found {
    label: String,
    row: SearchRow,
    steps: Vec<SearchStepRow>,
}

fn shown(v: Option<f64>) -> String {
    v.map_or("—".to_string(), number)
}

fn table(found: &[Found]) -> String {
    let mut s = String::from("<table><thead><tr><th>run</th><th>searched</th><th>SLO</th><th>highest passing / best</th><th>first failing</th><th>failed metric</th><th>probes</th><th>result</th></tr></thead><tbody>");
    for f in found {
        let slo: Vec<String> = f.row.slo.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&f.label),
            escape(&f.row.variable),
            escape(&slo.join(", ")),
            shown(f.row.best_pass),
            shown(f.row.first_fail),
            escape(f.row.failed_metric.as_deref().unwrap_or("—")),
            f.steps.len(),
            escape(&f.row.message)
        );
    }
    s.push_str("</tbody></table>");
    s
}

/// One chart per (variable, SLO metric): a line per search, a flat line per SLO limit.
pub fn charts(found: &[(String, SearchRow, Vec<SearchStepRow>)]) -> Vec<Chart> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (_, row, _) in found {
        for metric in row.slo.keys() {
            let key = (row.variable.clone(), metric.clone());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let mut out = Vec::new();
    for (variable, metric) in keys {
        let mut series = Vec::new();
        let mut limits: Vec<(String, f64)> = Vec::new();
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        for (label, row, steps) in found.iter().filter(|f| f.1.variable == variable) {
            let Some(text) = row.slo.get(&metric) else {
                continue;
            };
            let mut points: Vec<(f64, f64)> = steps
                .iter()
                .filter_map(|s| Some((s.value, s.metrics.get(&metric).copied().flatten()?)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            for p in &points {
                x0 = x0.min(p.0);
                x1 = x1.max(p.0);
            }
            if let Ok(c) = parse_condition(&metric, text) {
                if let Threshold::Absolute(v) = c.threshold {
                    if !limits.iter().any(|l| l.0 == c.text) {
                        limits.push((c.text.clone(), v));
                    }
                }
            }
            series.push(Series {
                name: label.clone(),
                points,
                markers: true,
                scatter: false,
                labels: Vec::new(),
            });
        }
        if series.iter().all(|s| s.points.is_empty()) || !x0.is_finite() {
            continue;
        }
        for (text, v) in limits {
            series.push(Series {
                name: format!("SLO {metric} {text}"),
                points: vec![(x0, v), (x1, v)],
                markers: false,
                scatter: false,
                labels: Vec::new(),
            });
        }
        let unit = if variable == "rate" {
            "request rate (req/s)"
        } else {
            "concurrency"
        };
        out.push(Chart {
            title: format!("SLA search: {metric} vs {variable}"),
            x_label: unit.into(),
            y_label: match unit_of(&metric) {
                Some(MetricUnit::Millis) => format!("{metric} (ms)"),
                _ => metric.clone(),
            },
            series,
            how: "each point is one probe of the search, in the order it was tried; a \
                  flat line is the SLO: the search's answer is the highest load whose probe \
                  stayed on the good side of it"
                .into(),
            ..Chart::default()
        });
    }
    out
}

/// The section (empty when the suite has no search).
pub fn section(store: &Store, runs: &[StoredRun]) -> Result<String, ReportError> {
    let rows = store.searches()?;
    if rows.is_empty() {
        return Ok(String::new());
    }
    let labels = Labels::new(runs);
    let mut found = Vec::new();
    for run in runs {
        let Some(row) = rows.iter().find(|r| r.run_id == run.id) else {
            continue;
        };
        found.push(Found {
            label: format!("#{} {}", run.ordinal, labels.run(run)),
            row: row.clone(),
            steps: store.search_steps(&row.run_id)?,
        });
    }
    let mut s = format!("<h2>SLA searches</h2>{}", table(&found));
    let triples: Vec<(String, SearchRow, Vec<SearchStepRow>)> = found
        .into_iter()
        .map(|f| (f.label, f.row, f.steps))
        .collect();
    for chart in charts(&triples) {
        s.push_str(&super::svg::line_figure(&chart));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(value: f64, p99: f64) -> SearchStepRow {
        SearchStepRow {
            search_id: "s".into(),
            step: 0,
            value,
            passed: p99 <= 2000.0,
            failed_metric: None,
            metrics: [("ttft_p99".to_string(), Some(p99))].into(),
        }
    }

    #[test]
    fn one_chart_per_slo_metric_with_the_limit_line() {
        let row = SearchRow {
            run_id: "s".into(),
            variable: "concurrency".into(),
            outcome: "found".into(),
            best_pass: Some(16.0),
            first_fail: Some(17.0),
            failed_metric: Some("ttft_p99".into()),
            slo: [("ttft_p99".to_string(), "<= 2s".to_string())].into(),
            message: String::new(),
        };
        let charts = charts(&[(
            "cache-on".into(),
            row,
            vec![step(32.0, 3000.0), step(1.0, 100.0), step(16.0, 1500.0)],
        )]);
        assert_eq!(charts.len(), 1);
        let c = &charts[0];
        assert_eq!(c.series.len(), 2);
        assert_eq!(
            c.series[0].points,
            vec![(1.0, 100.0), (16.0, 1500.0), (32.0, 3000.0)]
        );
        assert_eq!(c.series[1].points, vec![(1.0, 2000.0), (32.0, 2000.0)]);
        assert!(c.series[1].name.contains("<= 2s"));
        assert_eq!(c.y_label, "ttft_p99 (ms)");
    }
}
