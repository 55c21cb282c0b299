//! The Prometheus text exposition of a suite (`perfplan report DB --format prometheus`):
//! every stored metric of every run as a gauge, for a node exporter's textfile collector
//! or a push gateway. One naming rule, from the metric registry's unit: `perfplan_` +
//! the vocabulary name + the base unit's suffix, the value in that base unit
//! (`ttft_p99` in ms → `perfplan_ttft_p99_seconds` in seconds; `output_tps` →
//! `perfplan_output_tps_tokens_per_second`; a ratio → `_ratio`). Labels: `suite` (the
//! plan's name), `suite_created` (its creation, RFC 3339), `run` (id), `ordinal`,
//! `verdict`, one label per axis (as the reports label it: `endpoint="a"`; a table-valued
//! axis such as a load, a label per key: `load_concurrency="8"`, `load_requests="64"`),
//! and `class` for a mix class's `METRIC@CLASS`. Unknown values are left out, never written as
//! NaN; names outside the vocabulary are left out too.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::pivot::axis_label;
use super::ReportData;
use crate::metrics::names;
use crate::metrics::registry::{self, MetricUnit};

/// Labels perfplan sets itself; an axis of one of these names is written `axis_NAME`.
const OWN_LABELS: [&str; 6] = [
    "suite",
    "suite_created",
    "run",
    "ordinal",
    "verdict",
    "class",
];

/// The base unit's name suffix and the factor from the stored unit to it.
fn base_unit(unit: MetricUnit) -> (&'static str, f64) {
    match unit {
        MetricUnit::Millis => ("seconds", 1e-3),
        MetricUnit::Seconds => ("seconds", 1.0),
        MetricUnit::Ratio => ("ratio", 1.0),
        MetricUnit::Tokens => ("tokens", 1.0),
        MetricUnit::TokensPerSec => ("tokens_per_second", 1.0),
        MetricUnit::RequestsPerSec => ("requests_per_second", 1.0),
        MetricUnit::Count => ("", 1.0),
        MetricUnit::Watts => ("watts", 1.0),
        MetricUnit::JoulesPerToken => ("joules_per_token", 1.0),
        MetricUnit::TokensPerJoule => ("tokens_per_joule", 1.0),
        // The plan's currency, whatever it is: the name already says per what.
        MetricUnit::CostPerMillionTokens => ("", 1.0),
    }
}

/// The exposed name of a vocabulary metric and the factor its value is scaled by; `None`
/// for a name outside the vocabulary.
pub(crate) fn exposed_name(metric: &str) -> Option<(String, f64)> {
    let (base, _) = names::split_class(metric);
    let unit = registry::unit_of(base)?;
    let (suffix, scale) = base_unit(unit);
    let mut name = format!("perfplan_{base}");
    if !suffix.is_empty() && !name.ends_with(&format!("_{suffix}")) {
        name.push('_');
        name.push_str(suffix);
    }
    Some((name, scale))
}

/// A label name: letters, digits and `_`, not starting with a digit nor `__`.
fn label_name(axis: &str) -> String {
    let mut name: String = axis
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit())
        || name.starts_with("__")
        || OWN_LABELS.contains(&name.as_str())
    {
        name.insert_str(0, "axis_");
    }
    name
}

/// A label value escaped as the exposition format says (`\\`, `\"`, `\n`).
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The `{…}` of a run's samples, without the class.
fn run_labels(data: &ReportData, run: &crate::store::StoredRun) -> Vec<(String, String)> {
    let created = crate::units::UtcTime::of_unix_ms(data.suite.created_unix_ms);
    let mut labels = vec![
        ("suite".to_string(), data.suite.info.plan_name.clone()),
        (
            "suite_created".to_string(),
            format!("{}T{}Z", created.date(), created.time()),
        ),
        ("run".to_string(), run.id.clone()),
        ("ordinal".to_string(), run.ordinal.to_string()),
        (
            "verdict".to_string(),
            run.verdict.status.as_str().to_string(),
        ),
    ];
    if let Value::Object(axes) = &run.axes {
        for (axis, value) in axes {
            match value {
                // A table-valued axis (a load) is a label per key, for dashboards to
                // filter on: `load_concurrency="8"`, `load_requests="64"`.
                Value::Object(table) => {
                    for (key, v) in table {
                        let one = serde_json::json!({ key: v });
                        let text = axis_label(Some(&one));
                        let text = text
                            .strip_prefix(&format!("{key}="))
                            .unwrap_or(&text)
                            .to_string();
                        labels.push((label_name(&format!("{axis}_{key}")), text));
                    }
                }
                _ => labels.push((label_name(axis), axis_label(Some(value)))),
            }
        }
    }
    labels
}

fn braces(labels: &[(String, String)]) -> String {
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", label_value(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// One value of one run, named and labelled by the one rule (the Prometheus exposition
/// and the OTLP export both write these).
#[derive(Debug, Clone, PartialEq)]
pub struct Gauge {
    /// The exposed name (`perfplan_ttft_p99_seconds`).
    pub name: String,
    /// The registry's definition of the metric.
    pub help: String,
    /// The base unit's suffix (`seconds`, `ratio`, `tokens_per_second`; empty for a count).
    pub unit: &'static str,
    pub labels: Vec<(String, String)>,
    /// In the base unit.
    pub value: f64,
}

/// Every finite stored metric of every run in the vocabulary, as gauges.
pub fn gauges(data: &ReportData) -> Vec<Gauge> {
    let mut out = Vec::new();
    for run in &data.runs {
        let labels = run_labels(data, run);
        for (metric, value) in &run.metrics {
            let Some(v) = value.filter(|v| v.is_finite()) else {
                continue;
            };
            let Some((name, scale)) = exposed_name(metric) else {
                continue;
            };
            let (base, class) = names::split_class(metric);
            let mut labels = labels.clone();
            if let Some(class) = class {
                labels.push(("class".into(), class.to_string()));
            }
            let help = registry::lookup(base)
                .map(|m| m.definition.to_string())
                .unwrap_or_default();
            let unit = registry::unit_of(base).map_or("", |u| base_unit(u).0);
            out.push(Gauge {
                name,
                help,
                unit,
                labels,
                value: v * scale,
            });
        }
    }
    out
}

/// The exposition of every run's stored metrics.
pub fn render(data: &ReportData) -> String {
    // Family name → (help, samples), so each family's samples follow its HELP and TYPE.
    let mut families: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for g in gauges(data) {
        let entry = families
            .entry(g.name.clone())
            .or_insert_with(|| (g.help.clone(), Vec::new()));
        entry
            .1
            .push(format!("{}{} {}", g.name, braces(&g.labels), g.value));
    }
    let mut out = String::new();
    for (name, (help, samples)) in families {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for s in samples {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_units_rule() {
        let n = exposed_name;
        assert_eq!(
            n("ttft_p99"),
            Some(("perfplan_ttft_p99_seconds".into(), 1e-3))
        );
        assert_eq!(
            n("output_tps"),
            Some(("perfplan_output_tps_tokens_per_second".into(), 1.0))
        );
        assert_eq!(
            n("cache_hit_ratio"),
            Some(("perfplan_cache_hit_ratio".into(), 1.0))
        );
        assert_eq!(
            n("input_tokens_mean"),
            Some(("perfplan_input_tokens_mean_tokens".into(), 1.0))
        );
        assert_eq!(
            n("ttft_p50@rag"),
            Some(("perfplan_ttft_p50_seconds".into(), 1e-3))
        );
        assert_eq!(n("no_such_metric"), None);
    }

    #[test]
    fn labels_are_legal_and_escaped() {
        assert_eq!(label_name("cache_state"), "cache_state");
        assert_eq!(label_name("run"), "axis_run");
        assert_eq!(label_name("max-tokens"), "max_tokens");
        assert_eq!(label_name("1st"), "axis_1st");
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
