//! Which plots the HTML report draws: TTFT/TPOT/throughput against concurrency (or
//! rate) with one line per variant, latency against throughput (one labelled point per
//! tier), and TTFT, TPOT and latency CDFs per run from the stored request rows.

use std::collections::BTreeMap;

use serde_json::Value;

use super::pivot::Labels;
use super::svg::{Chart, Series};
use crate::metrics::columns::Times;
use crate::metrics::stats::Distribution;
use crate::metrics::timing;
use crate::record::{Outcome, Phase};
use crate::store::{Store, StoreError, StoredRun};

/// How a CDF chart reads.
pub(crate) const CDF_HOW: &str = "one line per run; go up from a time to the line and across: \
that share of the run's requests took that long or less; a line further left is faster, \
and a long flat stretch at the top is the tail (p99)";

/// Longest CDF line, in points.
const CDF_POINTS: usize = 200;

/// The load level of a run: `("concurrency", 4.0)` or `("rate", 2.5)`.
pub(crate) fn load_level(run: &StoredRun) -> Option<(&'static str, f64)> {
    let from = |v: Option<&Value>| -> Option<(&'static str, f64)> {
        let v = v?;
        ["concurrency", "rate"]
            .into_iter()
            .find_map(|k| v.get(k).and_then(Value::as_f64).map(|x| (k, x)))
    };
    from(run.axes.get("load"))
        .or_else(|| from(Some(&run.axes)))
        .or_else(|| from(run.settings.get("load")))
}

/// The axes a run's load level lives in (drawn on the x axis, not as a line).
pub(crate) const LOAD_AXES: [&str; 3] = ["load", "concurrency", "rate"];

/// The run's varying axes other than its load: the variant a line stands for.
pub(crate) fn variant(run: &StoredRun, labels: &Labels) -> String {
    labels.short(run, &LOAD_AXES)
}

/// A point's tier label: `c=8` or `2.5 rps`.
fn tier_label(run: &StoredRun) -> String {
    match load_level(run) {
        Some(("rate", x)) => format!("{} rps", super::format::number(x)),
        Some((_, x)) => format!("c={}", super::format::number(x)),
        None => String::new(),
    }
}

/// One series per variant of `(x, y)` points, sorted by load level, each point
/// labelled with its tier when `tiers`.
fn by_variant(
    runs: &[StoredRun],
    tiers: bool,
    point: impl Fn(&StoredRun) -> Option<(f64, f64, f64)>,
) -> Vec<Series> {
    type Points = Vec<(f64, f64, f64, String)>;
    let labels = Labels::new(runs);
    let mut series: Vec<(String, Points)> = Vec::new();
    for run in runs {
        let Some((order, x, y)) = point(run) else {
            continue;
        };
        let p = (
            order,
            x,
            y,
            if tiers {
                tier_label(run)
            } else {
                String::new()
            },
        );
        let name = variant(run, &labels);
        match series.iter_mut().find(|(n, _)| *n == name) {
            Some((_, pts)) => pts.push(p),
            None => series.push((name, vec![p])),
        }
    }
    series
        .into_iter()
        .map(|(name, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                name,
                labels: pts.iter().map(|p| p.3.clone()).collect(),
                points: pts.into_iter().map(|(_, x, y, _)| (x, y)).collect(),
                markers: true,
                scatter: false,
            }
        })
        .collect()
}

fn metric(run: &StoredRun, name: &str) -> Option<f64> {
    run.metrics.get(name).copied().flatten()
}

/// What the load-axis charts say under them, by metric.
fn sweep_how(name: &str, x_label: &str) -> String {
    if name == "output_tps" {
        format!(
            "one line per variant, one point per {x_label} run; higher is better, and where \
             a line flattens more load no longer buys throughput (saturation)"
        )
    } else {
        format!(
            "one line per variant, one point per {x_label} run; lower is better, and where \
             a line turns steeply up requests are queueing"
        )
    }
}

/// The server's own TTFT beside the client's, as lines of their own: `server_ttft_p50`
/// estimated from the server's histogram buckets, on the server's clock.
fn server_ttft_series(runs: &[StoredRun], name: &str) -> Vec<Series> {
    let server = format!("server_{name}");
    by_variant(runs, false, |r| {
        let (_, x) = load_level(r)?;
        Some((x, x, metric(r, &server)?))
    })
    .into_iter()
    .map(|mut s| {
        s.name = format!("{} · server's histogram", s.name);
        s
    })
    .collect()
}

/// The sweep charts, when some variant has two or more load levels: each metric
/// against the load (ticks at the tiers run), then the operating-point curves (latency
/// against throughput, one point per tier, labelled with it), the chart a serving team
/// picks a tier from.
pub(crate) fn sweep_charts(runs: &[StoredRun]) -> Vec<Chart> {
    let Some((kind, _)) = runs.iter().find_map(load_level) else {
        return Vec::new();
    };
    let x_label = if kind == "rate" {
        "request rate (req/s)"
    } else {
        "concurrency"
    };
    let tiers: Vec<f64> = runs.iter().filter_map(|r| Some(load_level(r)?.1)).collect();
    let mut charts = Vec::new();
    for (name, title, unit) in [
        ("ttft_p50", "TTFT p50", "ms"),
        ("ttft_p99", "TTFT p99", "ms"),
        ("tpot_mean", "TPOT mean", "ms"),
        ("output_tps", "output throughput", "tok/s"),
    ] {
        let mut series = by_variant(runs, false, |r| {
            let (_, x) = load_level(r)?;
            Some((x, x, metric(r, name)?))
        });
        let mut how = sweep_how(
            name,
            if kind == "rate" {
                "rate"
            } else {
                "concurrency"
            },
        );
        if name.starts_with("ttft") {
            let server = server_ttft_series(runs, name);
            if !server.is_empty() {
                how.push_str(
                    "; the server's own TTFT is estimated from its histogram's buckets on \
                     its own clock (from its queue, not from the client's send): read it as \
                     a bound, not a match",
                );
            }
            series.extend(server);
        }
        let chart = Chart {
            title: format!("{title} vs {x_label}"),
            x_label: x_label.into(),
            y_label: format!("{name} ({unit})"),
            series,
            x_ticks: Some(tiers.clone()),
            how,
            ..Chart::default()
        };
        push_if_curve(&mut charts, chart);
    }
    for (name, title) in [
        ("latency_p50", "latency p50"),
        ("ttft_p99", "TTFT p99"),
        ("tpot_p50", "TPOT p50"),
    ] {
        let series = by_variant(runs, true, |r| {
            let (_, level) = load_level(r)?;
            Some((level, metric(r, "output_tps")?, metric(r, name)?))
        });
        let chart = Chart {
            title: format!("{title} vs output throughput (one point per tier)"),
            x_label: "output throughput (tok/s)".to_string(),
            y_label: format!("{name} (ms)"),
            series,
            how: "each point is a tier (labelled), load growing along the line; the knee is \
                  where the line turns up: past it, a little more throughput costs much more \
                  latency"
                .into(),
            ..Chart::default()
        };
        push_if_curve(&mut charts, chart);
    }
    charts
}

/// Adds the chart when some series has two or more points.
fn push_if_curve(charts: &mut Vec<Chart>, chart: Chart) {
    if chart.series.iter().any(|s| s.points.len() >= 2) {
        charts.push(chart);
    }
}

/// The empirical CDF of `n` values in ascending order read by rank with `at`.
fn cdf_of_sorted(n: usize, at: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut pts: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (at(i), (i + 1) as f64 / n as f64))
        .collect();
    if n > 0 && pts.last().is_some_and(|p| p.1 < 1.0) {
        pts.push((at(n - 1), 1.0));
    }
    pts
}

/// What the page draws of one run's requests: its CDFs (at most `CDF_POINTS` points
/// each) and its mean input lengths, kept instead of the run's per-request values so a
/// suite of millions of requests makes a page of a few hundred points per run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Digest {
    pub ttft_cdf: Vec<(f64, f64)>,
    pub tpot_cdf: Vec<(f64, f64)>,
    pub latency_cdf: Vec<(f64, f64)>,
    /// Mean input length per request: (target, client-counted, server-reported).
    pub input_means: (Option<f64>, Option<f64>, Option<f64>),
    /// The run's requests on its time axis (thinned to a bounded sample).
    pub timeline: super::timeline::Timeline,
    /// A mix run: each class's TTFT and latency CDFs, by class index.
    pub classes: BTreeMap<u16, ClassCdfs>,
}

/// One mix class's CDFs (at most `CDF_POINTS` points each).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassCdfs {
    pub ttft: Vec<(f64, f64)>,
    pub latency: Vec<(f64, f64)>,
}

impl Digest {
    /// The digest of a stored run, its rows read one at a time into the metrics' own
    /// compact columns (4 bytes a request for each of TTFT and latency), never a whole
    /// `Sample`, under the run's own metric definitions; on the user clock (`clock`) each
    /// row moved to when the client read it.
    pub(crate) fn of_run(
        store: &Store,
        run: &StoredRun,
        clock: crate::record::Clock,
    ) -> Result<Digest, StoreError> {
        let defs = super::bootstrap::definitions_of(run);
        let (mut ttft, mut tpot, mut latency) =
            (Times::default(), Times::default(), Times::default());
        let mut means = super::bootstrap::InputMeans::default();
        let mut timeline = super::timeline::Timeline::default();
        let mut classes: BTreeMap<u16, (Times, Times)> = BTreeMap::new();
        store.each_request_row(&run.id, |mut row| {
            if clock == crate::record::Clock::User {
                row.record.move_to_user_clock();
            }
            let r = &row.record;
            timeline.push(r);
            if r.phase != Phase::Measured || r.outcome != Outcome::Ok {
                return;
            }
            means.add(&row);
            let t = timing(r, defs);
            if let Some(x) = t.ttft {
                ttft.push(x);
            }
            if let Some(c) = r.class {
                let (ct, cl) = classes.entry(c).or_default();
                if let Some(x) = t.ttft {
                    ct.push(x);
                }
                cl.push(t.latency);
            }
            if let Some(x) = r.output_tokens().and_then(|(n, _)| t.tpot(n)) {
                tpot.push(x);
            }
            latency.push(t.latency);
        })?;
        let curve = |t: Times| {
            let sorted = t.sorted();
            cdf_of_sorted(sorted.count() as usize, |i| sorted.at(i))
        };
        Ok(Digest {
            ttft_cdf: curve(ttft),
            tpot_cdf: curve(tpot),
            latency_cdf: curve(latency),
            input_means: means.get(),
            timeline,
            classes: classes
                .into_iter()
                .map(|(c, (t, l))| {
                    let cdfs = ClassCdfs {
                        ttft: curve(t),
                        latency: curve(l),
                    };
                    (c, cdfs)
                })
                .collect(),
        })
    }
}

/// TTFT, TPOT and latency CDFs, one line per run (`digests[i]` belongs to `runs[i]`).
pub(crate) fn cdf_charts(runs: &[StoredRun], digests: &[Digest]) -> Vec<Chart> {
    type Pick = fn(&Digest) -> &Vec<(f64, f64)>;
    let mut charts = Vec::new();
    let labels = Labels::new(runs);
    let picks: [(&str, Pick); 3] = [
        ("TTFT", |d| &d.ttft_cdf),
        ("TPOT", |d| &d.tpot_cdf),
        ("latency", |d| &d.latency_cdf),
    ];
    for (quantity, pick) in picks {
        let series: Vec<Series> = runs
            .iter()
            .zip(digests)
            .filter(|(_, d)| !pick(d).is_empty())
            .map(|(r, d)| Series {
                name: format!("#{} {}", r.ordinal, labels.short(r, &[])),
                points: pick(d).clone(),
                markers: false,
                scatter: false,
                labels: Vec::new(),
            })
            .collect();
        if !series.is_empty() {
            charts.push(Chart {
                title: format!("{quantity} CDF"),
                x_label: format!("{quantity} (ms)"),
                y_label: "share of requests".into(),
                series,
                how: CDF_HOW.into(),
                ..Chart::default()
            });
        }
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The empirical CDF of `values`, thinned to at most `CDF_POINTS` points.
    pub(crate) fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        cdf_of_sorted(v.len(), |i| v[i])
    }

    #[test]
    fn cdf_ends_at_one_and_is_thinned() {
        let values: Vec<f64> = (0..1000).map(f64::from).collect();
        let pts = cdf(&values);
        assert!(pts.len() <= CDF_POINTS + 1);
        assert_eq!(pts.last(), Some(&(999.0, 1.0)));
        assert_eq!(cdf(&[]), vec![]);
    }
}
