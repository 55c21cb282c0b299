//! Which plots the HTML report draws: TTFT/TPOT/throughput against concurrency (or
//! rate) with one line per variant, latency against throughput, and TTFT and latency
//! CDFs per run from the stored request rows.

use serde_json::Value;

use super::pivot::Labels;
use super::svg::{Chart, Series};
use crate::metrics::columns::Times;
use crate::metrics::stats::Distribution;
use crate::metrics::timing;
use crate::record::{Outcome, Phase};
use crate::store::{Store, StoreError, StoredRun};

/// Longest CDF line, in points.
const CDF_POINTS: usize = 200;

/// The load level of a run: `("concurrency", 4.0)` or `("rate", 2.5)`.
pub fn load_level(run: &StoredRun) -> Option<(&'static str, f64)> {
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

/// The run's varying axes other than its load: the variant a line stands for.
pub fn variant(run: &StoredRun, labels: &Labels) -> String {
    let name = labels.run_without(run, &["load", "concurrency", "rate"]);
    if name.is_empty() {
        "all runs".into()
    } else {
        name
    }
}

/// One series per variant of `(x, y)` points, sorted by load level.
fn by_variant(
    runs: &[StoredRun],
    point: impl Fn(&StoredRun) -> Option<(f64, f64, f64)>,
) -> Vec<Series> {
    type Points = Vec<(f64, f64, f64)>;
    let labels = Labels::new(runs);
    let mut series: Vec<(String, Points)> = Vec::new();
    for run in runs {
        let Some(p) = point(run) else { continue };
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
                points: pts.into_iter().map(|(_, x, y)| (x, y)).collect(),
                markers: true,
            }
        })
        .collect()
}

fn metric(run: &StoredRun, name: &str) -> Option<f64> {
    run.metrics.get(name).copied().flatten()
}

/// The sweep charts, when some variant has two or more load levels.
pub fn sweep_charts(runs: &[StoredRun]) -> Vec<Chart> {
    let Some((kind, _)) = runs.iter().find_map(load_level) else {
        return Vec::new();
    };
    let x_label = if kind == "rate" {
        "request rate (req/s)"
    } else {
        "concurrency"
    };
    let mut charts = Vec::new();
    for (name, title, unit) in [
        ("ttft_p50", "TTFT p50", "ms"),
        ("ttft_p99", "TTFT p99", "ms"),
        ("tpot_mean", "TPOT mean", "ms"),
        ("output_tps", "output throughput", "tok/s"),
    ] {
        let series = by_variant(runs, |r| {
            let (_, x) = load_level(r)?;
            Some((x, x, metric(r, name)?))
        });
        if series.iter().any(|s| s.points.len() >= 2) {
            charts.push(Chart {
                title: format!("{title} vs {x_label}"),
                x_label: x_label.into(),
                y_label: format!("{name} ({unit})"),
                series,
            });
        }
    }
    let series = by_variant(runs, |r| {
        let (_, level) = load_level(r)?;
        Some((level, metric(r, "output_tps")?, metric(r, "latency_p50")?))
    });
    if series.iter().any(|s| s.points.len() >= 2) {
        charts.push(Chart {
            title: "latency vs throughput".into(),
            x_label: "output throughput (tok/s)".into(),
            y_label: "latency_p50 (ms)".into(),
            series,
        });
    }
    charts
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
    pub latency_cdf: Vec<(f64, f64)>,
    /// Mean input length per request: (target, client-counted, server-reported).
    pub input_means: (Option<f64>, Option<f64>, Option<f64>),
}

impl Digest {
    /// The digest of a stored run, its rows read one at a time into the metrics' own
    /// compact columns (4 bytes a request for each of TTFT and latency), never a whole
    /// `Sample`, under the run's own metric definitions.
    pub fn of_run(store: &Store, run: &StoredRun) -> Result<Digest, StoreError> {
        let defs = super::bootstrap::definitions_of(run);
        let (mut ttft, mut latency) = (Times::default(), Times::default());
        let mut means = super::bootstrap::InputMeans::default();
        store.each_request_row(&run.id, |row| {
            let r = &row.record;
            if r.phase != Phase::Measured || r.outcome != Outcome::Ok {
                return;
            }
            means.add(&row);
            let t = timing(r, defs);
            if let Some(x) = t.ttft {
                ttft.push(x);
            }
            latency.push(t.latency);
        })?;
        let curve = |t: Times| {
            let sorted = t.sorted();
            cdf_of_sorted(sorted.count() as usize, |i| sorted.at(i))
        };
        Ok(Digest {
            ttft_cdf: curve(ttft),
            latency_cdf: curve(latency),
            input_means: means.get(),
        })
    }
}

/// TTFT and latency CDFs, one line per run (`digests[i]` belongs to `runs[i]`).
pub fn cdf_charts(runs: &[StoredRun], digests: &[Digest]) -> Vec<Chart> {
    let mut charts = Vec::new();
    let labels = Labels::new(runs);
    for (title, pick) in [
        (
            "TTFT CDF",
            (|d: &Digest| &d.ttft_cdf) as fn(&Digest) -> &Vec<(f64, f64)>,
        ),
        ("latency CDF", |d: &Digest| &d.latency_cdf),
    ] {
        let series: Vec<Series> = runs
            .iter()
            .zip(digests)
            .filter(|(_, d)| !pick(d).is_empty())
            .map(|(r, d)| Series {
                name: format!("#{} {}", r.ordinal, labels.run(r)),
                points: pick(d).clone(),
                markers: false,
            })
            .collect();
        if !series.is_empty() {
            let quantity = title.trim_end_matches(" CDF");
            charts.push(Chart {
                title: title.into(),
                x_label: format!("{quantity} (ms)"),
                y_label: "share of requests".into(),
                series,
            });
        }
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The empirical CDF of `values`, thinned to at most `CDF_POINTS` points.
    pub fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
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
