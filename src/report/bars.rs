//! Compared axes side by side: for each axis whose values a suite compares (cache on
//! vs off, endpoint A vs B, text vs token ids), grouped horizontal bars of a few key
//! metrics, one group per combination of the other axes (load included) and one bar
//! per value of the compared axis. Inline SVG, no script.

use std::fmt::Write;

use super::format::number;
use super::pivot::Labels;
use super::plots::LOAD_AXES;
use super::svg::{escape, open, PALETTE, W};
use crate::store::StoredRun;

/// Most values an axis may have to be drawn as bars (more is a sweep, not a comparison).
const MAX_VALUES: usize = 6;

/// The metrics compared, with their titles and units.
const METRICS: [(&str, &str, &str); 5] = [
    ("ttft_p50", "TTFT p50", "ms"),
    ("tpot_mean", "TPOT mean", "ms"),
    ("latency_p50", "latency p50", "ms"),
    ("output_tps", "output throughput", "tok/s"),
    ("cache_hit_ratio", "cache hit ratio (usage)", ""),
];

/// One bar chart: groups of bars, one bar per value of the compared axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BarChart {
    pub title: String,
    pub unit: String,
    /// The compared axis's values, in order of first appearance: the bar colours.
    pub values: Vec<String>,
    /// `(group label, one value per compared value)`.
    pub groups: Vec<(String, Vec<Option<f64>>)>,
}

/// The compared axes of `runs` and their bar charts: every varying axis other than the
/// load with at most `MAX_VALUES` values; a metric no run of the suite has is left out.
pub(crate) fn compared_charts(runs: &[StoredRun]) -> Vec<BarChart> {
    let labels = Labels::new(runs);
    let mut charts = Vec::new();
    for axis in labels.varying() {
        if LOAD_AXES.contains(&axis.as_str()) {
            continue;
        }
        let mut values: Vec<String> = Vec::new();
        for run in runs {
            let v = labels.value(axis, run.axes.get(axis));
            if !values.contains(&v) {
                values.push(v);
            }
        }
        if values.len() < 2 || values.len() > MAX_VALUES {
            continue;
        }
        for (metric, title, unit) in METRICS {
            let chart = chart_of(runs, &labels, (axis, &values), (metric, title, unit));
            if chart
                .groups
                .iter()
                .any(|(_, vs)| vs.iter().flatten().count() >= 2)
            {
                charts.push(chart);
            }
        }
    }
    charts
}

fn chart_of(
    runs: &[StoredRun],
    labels: &Labels,
    (axis, values): (&str, &[String]),
    (metric, title, unit): (&str, &str, &str),
) -> BarChart {
    let mut groups: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for run in runs {
        let group = labels.short(run, &[axis]);
        let at = values
            .iter()
            .position(|v| *v == labels.value(axis, run.axes.get(axis)));
        let Some(at) = at else { continue };
        let value = run.metrics.get(metric).copied().flatten();
        let slot = match groups.iter().position(|(g, _)| *g == group) {
            Some(i) => i,
            None => {
                groups.push((group, vec![None; values.len()]));
                groups.len() - 1
            }
        };
        // The first run of a combination is the one drawn (as in the pivot table).
        groups[slot].1[at] = groups[slot].1[at].or(value);
    }
    BarChart {
        title: format!("{title}: {axis} side by side"),
        unit: unit.into(),
        values: values.to_vec(),
        groups,
    }
}

const LEFT: f64 = 300.0;
const RIGHT: f64 = 90.0;
const TOP: f64 = 52.0;
const BAR: f64 = 14.0;
const GAP: f64 = 12.0;

/// The chart as an `<svg>` element.
pub(crate) fn bar_chart(chart: &BarChart) -> String {
    let per_group = BAR * chart.values.len() as f64 + GAP;
    let mut key = String::new();
    let top = TOP + legend(&mut key, &chart.values);
    let height = top + per_group * chart.groups.len() as f64 + 12.0;
    let max = chart
        .groups
        .iter()
        .flat_map(|(_, vs)| vs.iter().flatten())
        .fold(0.0_f64, |m, v| m.max(*v))
        .max(f64::MIN_POSITIVE);
    let pw = W - LEFT - RIGHT;
    let mut s = open(&chart.title, height, 10.0);
    s.push_str(&key);
    for (g, (label, vs)) in chart.groups.iter().enumerate() {
        let y0 = top + per_group * g as f64;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            y0 + per_group / 2.0,
            escape(label)
        );
        for (i, v) in vs.iter().enumerate() {
            let y = y0 + BAR * i as f64;
            let color = PALETTE[i % PALETTE.len()];
            let (width, text) = match v {
                Some(v) => (v / max * pw, format_value(*v, &chart.unit)),
                None => (0.0, "—".to_string()),
            };
            let _ = write!(
                s,
                r#"<g><title>{}: {}</title><rect x="{LEFT}" y="{y:.1}" width="{width:.1}" height="{:.1}" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="12">{}</text></g>"#,
                escape(&chart.values[i]),
                escape(&text),
                BAR - 2.0,
                LEFT + width + 4.0,
                y + BAR - 4.0,
                escape(&text)
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// The colour of each compared value, in rows under the title (a row wraps before the
/// chart's edge); the height the rows take.
fn legend(s: &mut String, values: &[String]) -> f64 {
    let (mut x, mut y) = (10.0, 32.0);
    for (i, v) in values.iter().enumerate() {
        let shown: String = v.chars().take(80).collect();
        let width = 16.0 + 6.5 * shown.chars().count() as f64 + 18.0;
        if x > 10.0 && x + width > W - 10.0 {
            (x, y) = (10.0, y + 16.0);
        }
        let color = PALETTE[i % PALETTE.len()];
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{y:.1}" width="12" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 16.0,
            y + 9.0,
            escape(&shown)
        );
        x += width;
    }
    y - 32.0
}

fn format_value(v: f64, unit: &str) -> String {
    match unit {
        "" => format!("{:.1}%", v * 100.0),
        u => format!("{} {u}", number(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(ordinal: u32, endpoint: &str, load: i64, ttft: f64) -> StoredRun {
        StoredRun {
            id: format!("r{ordinal}"),
            ordinal,
            axes: json!({"endpoint": endpoint, "load": {"concurrency": load}}),
            settings: json!({}),
            status: crate::store::RunStatus::Done,
            started_unix_ms: None,
            finished_unix_ms: None,
            warnings: Vec::new(),
            facts: crate::record::RunFacts::default(),
            error: None,
            metrics: [("ttft_p50".to_string(), Some(ttft))].into(),
            verdict: Default::default(),
        }
    }

    #[test]
    fn one_group_per_other_axes_and_one_bar_per_value() {
        let runs = vec![
            run(1, "a", 1, 10.0),
            run(2, "a", 8, 20.0),
            run(3, "b", 1, 30.0),
            run(4, "b", 8, 40.0),
        ];
        let charts = compared_charts(&runs);
        assert_eq!(charts.len(), 1, "only ttft_p50 is known: {charts:?}");
        let c = &charts[0];
        assert_eq!(c.values, vec!["a", "b"]);
        assert_eq!(
            c.groups,
            vec![
                ("concurrency=1".to_string(), vec![Some(10.0), Some(30.0)]),
                ("concurrency=8".to_string(), vec![Some(20.0), Some(40.0)]),
            ]
        );
        let svg = bar_chart(c);
        assert!(svg.contains("40 ms") && svg.contains(">a</text>"), "{svg}");
    }

    #[test]
    fn a_load_sweep_alone_has_no_bars() {
        let runs = vec![run(1, "a", 1, 10.0), run(2, "a", 8, 20.0)];
        assert!(compared_charts(&runs).is_empty());
    }
}
