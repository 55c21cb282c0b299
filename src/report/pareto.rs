//! The Pareto chart of the HTML report (the book, reports/html.md): every run and every
//! ramp or exploring step of a suite as a point of per-user speed (output tok/s per user)
//! against throughput per accelerator (`output_tps_per_accelerator`; plain output tok/s
//! when no endpoint says its hardware), one front per endpoint: the points no other point
//! of that endpoint beats on both at once, joined by a line and labelled by tier; the
//! points off the front as markers. A step's point is its stored `output_tps_per_user`
//! (users: a concurrency step's level, a rate step's mean in flight by Little's law;
//! `metrics::steps`); a concurrency step stored before it has its output tok/s over its
//! level. Reads stored metrics and steps only.

use serde_json::Value;

use super::plots::load_level;
use super::ramp_steps::steps_of;
use super::svg::{Chart, Series};
use crate::record::facts::StepFacts;
use crate::store::StoredRun;

/// How the chart reads.
const HOW: &str = "each point is a run or a step (labelled by its tier); right is faster for \
each user, up is more throughput from the same hardware; the line joins an endpoint's \
points that no other of its points beats on both at once (its Pareto front): pick an \
operating point on it, and a release whose front lies up and to the right serves more at \
every speed. A run or step of an open loop (a rate, or an exploring or ramp step by rate) \
has as its users its measured mean in flight, by Little's law: the requests that ended in \
it per second × their mean latency";

/// One point: (tok/s per user, tok/s per accelerator or in all, tier label).
type Point = (f64, f64, String);

fn metric(run: &StoredRun, name: &str) -> Option<f64> {
    run.metrics.get(name).copied().flatten()
}

fn endpoint(run: &StoredRun) -> String {
    run.settings
        .pointer("/endpoint/name")
        .and_then(Value::as_str)
        .unwrap_or("endpoint")
        .to_string()
}

fn accelerators(run: &StoredRun) -> Option<f64> {
    run.settings
        .pointer("/endpoint/hardware/accelerators")
        .and_then(Value::as_f64)
        .filter(|a| *a > 0.0)
}

/// One step's point: its stored per-user figure (else, from before it, its output tok/s
/// over a concurrency step's level), labelled by its level.
fn step_point(step: &StepFacts, share: f64) -> Option<Point> {
    let tps = step.metric("output_tps")?;
    let users = step.concurrency;
    let per_user = step
        .metric("output_tps_per_user")
        .or_else(|| users.filter(|c| *c > 0.0).map(|c| tps / c))?;
    let label = match (users, step.rate) {
        (Some(c), _) => format!("c={}", super::format::setting(c)),
        (None, Some(r)) => format!("{} rps", super::format::setting(r)),
        (None, None) => String::new(),
    };
    Some((per_user, tps / share, label))
}

/// The run's own point and its steps'.
fn points_of(run: &StoredRun, per_accelerator: bool) -> Vec<Point> {
    let share = if per_accelerator {
        accelerators(run)
    } else {
        Some(1.0)
    };
    let Some(share) = share else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let tier = match load_level(run) {
        Some(("rate", x)) => format!("{} rps", super::format::setting(x)),
        Some((_, x)) => format!("c={}", super::format::setting(x)),
        None => String::new(),
    };
    if let (Some(x), Some(tps)) = (
        metric(run, "output_tps_per_user"),
        metric(run, "output_tps"),
    ) {
        // A ramp or exploring run's whole is a mix of its steps: its steps stand for it.
        if steps_of(run).is_none() {
            out.push((x, tps / share, tier));
        }
    }
    let steps = steps_of(run).map(Vec::as_slice).unwrap_or_default();
    out.extend(steps.iter().filter_map(|s| step_point(s, share)));
    out
}

/// The points no other point beats on both axes (one at least as good on both and
/// better on one), by per-user speed.
pub fn front(points: &[Point]) -> Vec<Point> {
    let beaten = |p: &Point| {
        points
            .iter()
            .any(|q| q.0 >= p.0 && q.1 >= p.1 && (q.0 > p.0 || q.1 > p.1))
    };
    let mut out: Vec<Point> = points.iter().filter(|p| !beaten(p)).cloned().collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    out
}

/// The chart, when the suite has two points or more.
pub fn chart(runs: &[StoredRun]) -> Option<Chart> {
    let per_accelerator = runs
        .iter()
        .any(|r| metric(r, "output_tps_per_accelerator").is_some());
    let mut endpoints: Vec<(String, Vec<Point>)> = Vec::new();
    for run in runs {
        let pts = points_of(run, per_accelerator);
        let name = endpoint(run);
        match endpoints.iter_mut().find(|(n, _)| *n == name) {
            Some((_, all)) => all.extend(pts),
            None => endpoints.push((name, pts)),
        }
    }
    if endpoints.iter().map(|e| e.1.len()).sum::<usize>() < 2 {
        return None;
    }
    let mut series = Vec::new();
    for (name, pts) in endpoints.into_iter().filter(|e| !e.1.is_empty()) {
        let best = front(&pts);
        let rest: Vec<&Point> = pts
            .iter()
            .filter(|p| !best.iter().any(|b| b.0 == p.0 && b.1 == p.1))
            .collect();
        series.push(Series {
            name: format!("{name} · front"),
            points: best.iter().map(|p| (p.0, p.1)).collect(),
            labels: best.iter().map(|p| p.2.clone()).collect(),
            markers: true,
            scatter: false,
        });
        if !rest.is_empty() {
            series.push(Series {
                name: format!("{name} · off the front"),
                points: rest.iter().map(|p| (p.0, p.1)).collect(),
                labels: rest.iter().map(|p| p.2.clone()).collect(),
                markers: true,
                scatter: true,
            });
        }
    }
    let y_label = if per_accelerator {
        "output tok/s per accelerator"
    } else {
        "output tok/s (no hardware given)"
    };
    Some(Chart {
        title: "Pareto front: speed per user vs throughput".into(),
        x_label: "output tok/s per user".into(),
        y_label: y_label.into(),
        series,
        how: HOW.into(),
        ..Chart::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A run of `c` users on `endpoint` (8 accelerators) with its capacity metrics.
    fn run(endpoint: &str, c: f64, per_user: f64, tps: f64) -> StoredRun {
        let metrics = [
            ("output_tps_per_user", per_user),
            ("output_tps", tps),
            ("output_tps_per_accelerator", tps / 8.0),
        ];
        StoredRun {
            id: format!("{endpoint}{c}"),
            ordinal: 0,
            axes: json!({"load": {"concurrency": c}}),
            settings: json!({"endpoint": {"name": endpoint, "hardware": {"accelerators": 8}}}),
            status: crate::store::RunStatus::Done,
            started_unix_ms: None,
            finished_unix_ms: None,
            warnings: Vec::new(),
            facts: crate::record::RunFacts::default(),
            error: None,
            metrics: metrics
                .into_iter()
                .map(|(k, v)| (k.to_string(), Some(v)))
                .collect(),
            verdict: Default::default(),
        }
    }

    #[test]
    fn the_chart_draws_each_endpoints_front_from_the_runs_metrics() {
        let runs = vec![
            run("a", 1.0, 30.0, 30.0),
            run("a", 8.0, 25.0, 200.0),
            run("a", 16.0, 12.0, 200.0),
            run("b", 4.0, 20.0, 80.0),
        ];
        let chart = chart(&runs).unwrap();
        assert_eq!(chart.y_label, "output tok/s per accelerator");
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a · front", "a · off the front", "b · front"]);
        // The front's points are the runs' own per-user and per-accelerator figures.
        assert_eq!(chart.series[0].points, [(25.0, 25.0), (30.0, 3.75)]);
        assert_eq!(chart.series[0].labels, ["c=8", "c=1"]);
        assert!(chart.series[1].scatter && !chart.series[0].scatter);
        assert_eq!(chart.series[1].points, [(12.0, 25.0)]);
        assert!(super::chart(&runs[..1]).is_none());
    }

    #[test]
    fn a_rate_steps_users_are_its_mean_in_flight() {
        // An exploring run by rate: its steps have no concurrency, their per-user figure
        // is over their mean in flight (stored), the y axis their output tok/s over 8.
        let mut r = run("a", 1.0, 0.0, 0.0);
        r.axes = json!({"load": {"explore": {"by": "rate"}}});
        r.facts = crate::record::RunFacts::from_value(json!({"time": {"steps": [
            {"rate": 20.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"output_tps": 320.0, "output_tps_per_user": 200.0, "in_flight_mean": 1.6}},
            {"rate": 40.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"output_tps": 640.0, "output_tps_per_user": 190.0, "in_flight_mean": 3.37}},
            {"rate": 80.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"output_tps": 700.0, "output_tps_per_user": 60.0, "in_flight_mean": 11.7}},
            {"concurrency": 4.0, "start_s": 0.0, "end_s": 1.0, "metrics": {"output_tps": 400.0}},
        ]}}));
        let chart = chart(std::slice::from_ref(&r)).unwrap();
        let front = &chart.series[0];
        assert_eq!(front.points, [(60.0, 87.5), (190.0, 80.0), (200.0, 40.0)]);
        assert_eq!(front.labels, ["80 rps", "40 rps", "20 rps"]);
        // A concurrency step stored without the figure: its output tok/s over its level.
        assert_eq!(chart.series[1].points, [(100.0, 50.0)]);
        assert!(chart.how.contains("Little's law"));
    }

    #[test]
    fn the_front_is_the_points_nothing_beats() {
        let p = |x: f64, y: f64, l: &str| (x, y, l.to_string());
        let pts = vec![
            p(100.0, 100.0, "c=1"),
            p(95.0, 380.0, "c=4"),
            p(90.0, 700.0, "c=8"),
            p(50.0, 700.0, "c=16"), // as much throughput, slower: beaten by c=8
            p(80.0, 300.0, "c=12"), // beaten by c=4 on both
        ];
        let f = front(&pts);
        let labels: Vec<&str> = f.iter().map(|p| p.2.as_str()).collect();
        assert_eq!(labels, ["c=8", "c=4", "c=1"]);
        assert!(front(&[]).is_empty());
    }
}
