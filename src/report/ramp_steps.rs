//! Ramps in reports: the per-step metrics of a ramped run (the book, loads/ramps.md), read from
//! its facts (`time.steps`: each step's planned rate, or a concurrency ramp's
//! concurrency, its window and its metrics, as the suite stored them; a run without steps
//! shows none). Shown after the pivot as one table row per step in the table and
//! Markdown, with two charts in the HTML per kind of ramp (TTFT p50 and output tok/s
//! against each step's rate or concurrency), and as `steps` in the JSON.

use super::format::{displays_of, number};
use super::grid::{Grid, UNKNOWN};
use super::pivot::Labels;
use super::svg::{Chart, Series};
use crate::metrics::steps::{STEP_CAPACITY, STEP_METRICS};
use crate::record::facts::StepFacts;
use crate::store::StoredRun;

/// The stored steps of a run (`None` without a ramp or from a database before them).
pub(crate) fn steps_of(run: &StoredRun) -> Option<&Vec<StepFacts>> {
    (run.facts.time.as_ref())
        .and_then(|t| t.steps.as_ref())
        .filter(|s| !s.is_empty())
}

fn metric(step: &StepFacts, name: &str) -> Option<f64> {
    step.metric(name)
}

/// What a run's steps are planned by: a rate ramp's rate or a concurrency ramp's slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rate,
    Concurrency,
}

impl Kind {
    fn of(steps: &[StepFacts]) -> Kind {
        match steps.first().and_then(|s| s.concurrency) {
            Some(_) => Kind::Concurrency,
            None => Kind::Rate,
        }
    }

    /// A step's planned level of this kind.
    fn level(self, step: &StepFacts) -> Option<f64> {
        match self {
            Kind::Rate => step.rate,
            Kind::Concurrency => step.concurrency,
        }
    }

    fn header(self) -> &'static str {
        match self {
            Kind::Rate => "rate (req/s)",
            Kind::Concurrency => "concurrency",
        }
    }

    /// A step's load in a column both kinds share: `5/s`, `c=4`.
    fn mixed(self, v: &str) -> String {
        match self {
            Kind::Rate => format!("{v}/s"),
            Kind::Concurrency => format!("c={v}"),
        }
    }
}

/// One row per step of every ramped run: the run, the step's planned rate and window,
/// then each of `STEP_METRICS` in its display unit.
pub fn grid(runs: &[StoredRun]) -> Option<Grid> {
    let ramped: Vec<(&StoredRun, &Vec<StepFacts>)> = runs
        .iter()
        .filter_map(|r| steps_of(r).map(|s| (r, s)))
        .collect();
    if ramped.is_empty() {
        return None;
    }
    let labels = Labels::new(runs);
    let values_of = |m: &str| -> Vec<f64> {
        ramped
            .iter()
            .flat_map(|(_, s)| s.iter().filter_map(|st| metric(st, m)))
            .collect()
    };
    // The capacity figures where some step has them (steps stored before them, or
    // without `hardware`, add no column of blanks).
    let names: Vec<&str> = STEP_METRICS
        .iter()
        .copied()
        .chain(
            STEP_CAPACITY
                .iter()
                .copied()
                .filter(|m| !values_of(m).is_empty()),
        )
        .collect();
    let displays = displays_of(&names, values_of);
    let kinds: Vec<Kind> = ramped.iter().map(|(_, s)| Kind::of(s)).collect();
    let one_kind = kinds.windows(2).all(|w| w[0] == w[1]);
    let load_header = if one_kind { kinds[0].header() } else { "load" };
    let mut header: Vec<String> = ["run", "step", load_header, "from (s)", "to (s)"]
        .map(String::from)
        .to_vec();
    header.extend(displays.iter().map(|(m, d)| d.header(m)));
    let mut rows = Vec::new();
    for ((run, steps), kind) in ramped.into_iter().zip(kinds) {
        for (k, step) in steps.iter().enumerate() {
            let text = |v: Option<f64>| v.map_or(UNKNOWN.to_string(), number);
            let level = kind
                .level(step)
                .map_or(UNKNOWN.to_string(), super::format::setting);
            let load = match (level, one_kind) {
                (v, true) => v,
                (v, false) => kind.mixed(&v),
            };
            let mut row = vec![
                format!("#{} {}", run.ordinal, labels.run(run)),
                (k + 1).to_string(),
                load,
                text(Some(step.start_s)),
                text(Some(step.end_s)),
            ];
            row.extend(
                displays
                    .iter()
                    .map(|(m, d)| metric(step, m).map_or(UNKNOWN.to_string(), |v| d.value(v))),
            );
            rows.push(row);
        }
    }
    Some(Grid {
        header,
        rows,
        label_cols: 2,
        notes: vec![
            "each step: the requests planned in it (TTFT, TPOT, latency, ok/failed); rps and output tok/s from what ended in it".into(),
            "capacity per step, by the run's rule over the step's length: tok/s per user over a concurrency step's level, or a rate step's mean in flight (Little's law: the requests that ended in it per second × their mean latency); per accelerator and cost per million tokens from the endpoint's hardware".into(),
        ],
    })
}

/// TTFT p50 and output tok/s against each step's planned rate, one line per rate-ramped
/// run; then the same against each step's concurrency, one line per concurrency ramp.
pub fn charts(runs: &[StoredRun]) -> Vec<Chart> {
    let labels = Labels::new(runs);
    let series = |kind: Kind, name: &str| -> Vec<Series> {
        runs.iter()
            .filter_map(|r| {
                let steps = steps_of(r).filter(|s| Kind::of(s) == kind)?;
                let points = steps
                    .iter()
                    .filter_map(|s| kind.level(s).zip(metric(s, name)))
                    .collect::<Vec<_>>();
                (!points.is_empty()).then(|| Series {
                    name: format!("#{} {}", r.ordinal, labels.run(r)),
                    points,
                    markers: true,
                    scatter: false,
                    labels: Vec::new(),
                })
            })
            .collect()
    };
    // Ticks at the steps' levels (a rate series of 2, 4, 8 … req/s ticks there).
    let levels = |kind: Kind| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| steps_of(r).filter(|s| Kind::of(s) == kind))
            .flat_map(|steps| {
                steps
                    .iter()
                    .filter_map(|s| kind.level(s))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let mut out = Vec::new();
    for (kind, per, x_label) in [
        (Kind::Rate, "ramp step", "step rate (req/s)"),
        (Kind::Concurrency, "concurrency step", "step concurrency"),
    ] {
        let chart = |title: &str, y: &str, name: &str| Chart {
            title: format!("{title} per {per}"),
            x_label: x_label.into(),
            y_label: y.into(),
            series: series(kind, name),
            x_ticks: Some(levels(kind)),
            how: "one line per run, one point per step of its ramp (its metrics over that \
                  step alone); where TTFT turns up or throughput flattens, the server ran out \
                  of room"
                .into(),
            ..Chart::default()
        };
        let pair = [
            chart("TTFT p50", "TTFT p50 (ms)", "ttft_p50"),
            chart("Output tokens/s", "output tok/s", "output_tps"),
        ];
        if pair.iter().any(|c| !c.series.is_empty()) {
            out.extend(pair);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn run(steps: Value) -> StoredRun {
        StoredRun {
            id: "a".into(),
            ordinal: 1,
            axes: json!({"load": "rates 5,20/s step 1s"}),
            settings: json!({}),
            status: crate::store::RunStatus::Done,
            started_unix_ms: None,
            finished_unix_ms: None,
            warnings: Vec::new(),
            facts: crate::record::RunFacts::from_value(json!({"time": {"steps": steps}})),
            error: None,
            metrics: Default::default(),
            verdict: Default::default(),
        }
    }

    #[test]
    fn steps_become_rows_and_chart_points() {
        let steps = json!([
            {"rate": 5.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"rps": 5.0, "ttft_p50": 10.5, "output_tps": 40.0, "requests_ok": 5}},
            {"rate": 20.0, "start_s": 1.0, "end_s": 2.0, "metrics": {"rps": 19.0, "ttft_p50": 30.0, "output_tps": null}},
        ]);
        let runs = [run(steps)];
        let g = grid(&runs).unwrap();
        assert_eq!(g.rows.len(), 2);
        assert_eq!(g.header[2], "rate (req/s)");
        let ttft = g.header.iter().position(|h| h == "ttft_p50 (ms)").unwrap();
        assert_eq!(g.rows[1][ttft], "30");
        let tps = g
            .header
            .iter()
            .position(|h| h == "output_tps (tok/s)")
            .unwrap();
        assert_eq!(g.rows[1][tps], UNKNOWN);
        // No step has a capacity figure: no column for them.
        assert!(!g
            .header
            .iter()
            .any(|h| h.starts_with("output_tps_per_user")));
        let c = charts(&runs);
        assert_eq!(c[0].series[0].points, [(5.0, 10.5), (20.0, 30.0)]);
        assert_eq!(c[1].series[0].points, [(5.0, 40.0)]);
        assert!(grid(&[run(json!([]))]).is_none());
    }

    #[test]
    fn capacity_figures_get_columns_where_some_step_has_them() {
        let steps = json!([
            {"rate": 5.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"output_tps": 40.0,
              "in_flight_mean": 0.5, "output_tps_per_user": 80.0,
              "output_tps_per_accelerator": 20.0, "cost_per_million_output_tokens": 12.5,
              "cost_per_million_total_tokens": null}},
        ]);
        let g = grid(&[run(steps)]).unwrap();
        let col = |name: &str| {
            g.header
                .iter()
                .position(|h| h.starts_with(name))
                .unwrap_or_else(|| panic!("{name}: {:?}", g.header))
        };
        assert_eq!(g.rows[0][col("output_tps_per_user")], "80");
        assert_eq!(g.rows[0][col("output_tps_per_accelerator")], "20");
        assert_eq!(g.rows[0][col("cost_per_million_output_tokens")], "12.50");
        assert!(!g
            .header
            .iter()
            .any(|h| h.starts_with("cost_per_million_total")));
        assert_eq!(g.header.len(), 5 + STEP_METRICS.len() + 4);
    }

    #[test]
    fn concurrency_steps_have_their_own_column_and_charts() {
        let conc = run(json!([
            {"concurrency": 1.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"ttft_p50": 10.0, "output_tps": 80.0}},
            {"concurrency": 8.0, "start_s": 1.0, "end_s": 2.0, "metrics": {"ttft_p50": 50.0, "output_tps": 200.0}},
        ]));
        let g = grid(std::slice::from_ref(&conc)).unwrap();
        assert_eq!(
            (g.header[2].as_str(), g.rows[1][2].as_str()),
            ("concurrency", "8")
        );
        let c = charts(std::slice::from_ref(&conc));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].title, "TTFT p50 per concurrency step");
        assert_eq!(c[0].x_label, "step concurrency");
        assert_eq!(c[0].series[0].points, [(1.0, 10.0), (8.0, 50.0)]);
        // Both kinds: one load column that says which, and a pair of charts per kind.
        let rate =
            run(json!([{"rate": 5.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"ttft_p50": 9.0}}]));
        let both = [rate, conc];
        let g = grid(&both).unwrap();
        assert_eq!(g.header[2], "load");
        assert_eq!(
            (g.rows[0][2].as_str(), g.rows[2][2].as_str()),
            ("5/s", "c=8")
        );
        let c = charts(&both);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].title, "TTFT p50 per ramp step");
    }
}
