//! Each run on its own time axis, in the HTML report: its request timeline, its time
//! slices (output throughput, requests in flight, TTFT p50/p99 per slice, the
//! steady-state window marked) and the server's gauges scraped during it (running and
//! waiting requests, KV-cache use, GPU utilisation and power), every chart
//! on the same span (seconds from the start of the run's measured pass, warmup included).
//! A run with more slices than `MAX_SLICE_POINTS` draws every k-th one, and says so.

use std::fmt::Write;

use super::pivot::Labels;
use super::plots::Digest;
use super::slices::{run_slices, slice_width};
use super::svg::{escape, figure, line_figure, Band, Chart, Series};
use super::timeline::timeline_svg;
use super::ReportData;
use crate::metrics::slices::Slices;
use crate::store::{Store, StoreError, StoredRun, TelemetrySeries};
use crate::telemetry::families;

/// Most slices one chart draws.
const MAX_SLICE_POINTS: usize = 600;

/// The section: one `<details>` per run that sent requests (the first open). A run that
/// measured no successful request shows its error and its timeline, not empty charts.
pub fn section(store: &Store, data: &ReportData, digests: &[Digest]) -> Result<String, StoreError> {
    let labels = Labels::new(&data.runs);
    let width = slice_width(data);
    let mut s = String::from("<h2>Runs over time</h2>");
    let mut first = true;
    for (run, digest) in data.runs.iter().zip(digests) {
        if digest.timeline.seen == 0 {
            continue;
        }
        let name = format!("#{} {}", run.ordinal, labels.short(run, &[]));
        let slices = run_slices(store, &run.id, width, data.clock)?;
        let span = digest.timeline.span.max(slices_end(&slices));
        let failed = digest.latency_cdf.is_empty();
        let _ = write!(
            s,
            "<details class=\"run\"{}><summary>{}{}</summary>",
            if first { " open" } else { "" },
            escape(&name),
            if failed {
                " (no successful request)"
            } else {
                ""
            }
        );
        if failed {
            s.push_str(&failed_note(run));
        }
        s.push_str("<div class=\"charts\">");
        s.push_str(&figure(
            &timeline_svg(&format!("{name}: requests"), &digest.timeline, span),
            TIMELINE_HOW,
        ));
        let gauges = store.telemetry_series(&run.id)?;
        let slice_charts = if failed {
            Vec::new()
        } else {
            slice_charts(&name, &slices, span)
        };
        for chart in slice_charts
            .into_iter()
            .chain(gauge_charts(&name, &gauges, span))
        {
            s.push_str(&line_figure(&chart));
        }
        s.push_str("</div>");
        if !failed {
            s.push_str(&slices_note(run, &slices));
        }
        s.push_str("</details>");
        first = false;
    }
    Ok(s)
}

const TIMELINE_HOW: &str = "one bar per request from its send to its end, sorted by send \
time, the first token marked; bars that lengthen down the chart mean requests wait longer \
as the run goes on";

/// A run without a successful request: its error and its failures, where its charts
/// would be.
fn failed_note(run: &StoredRun) -> String {
    let failures = super::health::RunHealth::of(run).failures_text();
    let text = match (&run.error, failures) {
        (Some(e), Some(f)) => format!("{e}; failures: {f}"),
        (Some(e), None) => e.clone(),
        (None, Some(f)) => format!("failures: {f}"),
        (None, None) => "no request of its measured phase succeeded".into(),
    };
    format!(
        "<p class=\"error\">This run measured no successful request, so it draws no \
         per-slice charts: {}</p>",
        escape(&text)
    )
}

/// What the slices of a run are: their width, how many are drawn, the steady window.
fn slices_note(run: &StoredRun, slices: &Slices) -> String {
    if slices.slices.is_empty() {
        return String::new();
    }
    let stride = stride(slices);
    let drawn = if stride > 1 {
        format!(", every {stride}th of {} drawn", slices.slices.len())
    } else {
        String::new()
    };
    let steady = match slices.steady {
        Some(w) => format!(
            "steady-state window {:.2}–{:.2} s",
            slices.origin_s + w.start_s,
            slices.origin_s + w.end_s
        ),
        None => match (run.facts.time.as_ref()).and_then(|t| t.steady_missing.as_deref()) {
            Some(why) => format!("no steady-state window: {why}"),
            None => "no steady-state window".into(),
        },
    };
    format!(
        "<p class=\"facts\">{} slices of {} s{drawn}; {}.</p>",
        slices.slices.len(),
        super::format::number(slices.width_s),
        escape(&steady)
    )
}

/// Where the last slice ends, on the rows' time base.
fn slices_end(slices: &Slices) -> f64 {
    slices
        .slices
        .last()
        .map_or(0.0, |x| slices.origin_s + x.start_s + x.len_s)
}

fn stride(slices: &Slices) -> usize {
    slices.slices.len().div_ceil(MAX_SLICE_POINTS).max(1)
}

/// A line's points.
type Points = Vec<(f64, f64)>;

/// Completions a slice should hold for its rates to mean something: with fewer, the
/// rates are drawn over windows of several slices (said in the legend).
const MIN_COMPLETIONS: f64 = 5.0;

/// Slices merged `k` at a time: the window's middle, completions/s and output tok/s over
/// the whole window (a slice under half the width, the cut-short last one, is left out:
/// its rates would spike).
fn rate_points(slices: &Slices, k: usize) -> (Points, Points) {
    let full: Vec<&crate::metrics::slices::Slice> = slices
        .slices
        .iter()
        .filter(|x| x.len_s >= slices.width_s / 2.0)
        .collect();
    let windows: Vec<_> = full.chunks(k.max(1)).collect();
    let step = windows.len().div_ceil(MAX_SLICE_POINTS).max(1);
    let (mut rps, mut tps) = (Vec::new(), Vec::new());
    for w in windows.iter().step_by(step) {
        let (Some(a), Some(b)) = (w.first(), w.last()) else {
            continue;
        };
        let len: f64 = w.iter().map(|x| x.len_s).sum();
        let mid = slices.origin_s + (a.start_s + b.start_s + b.len_s) / 2.0;
        let done: u64 = w.iter().map(|x| x.ok).sum();
        let tokens: f64 = w.iter().map(|x| x.output_tps * x.len_s).sum();
        rps.push((mid, done as f64 / len));
        tps.push((mid, tokens / len));
    }
    (rps, tps)
}

/// How many slices a rate window spans: enough for `MIN_COMPLETIONS` a window on
/// average, at most a third of the run (three points at least).
fn window_of(slices: &Slices) -> usize {
    let n = slices.slices.len().max(1);
    let done: u64 = slices.slices.iter().map(|x| x.ok).sum();
    let per_slice = done as f64 / n as f64;
    if per_slice >= MIN_COMPLETIONS || done == 0 {
        return 1;
    }
    ((MIN_COMPLETIONS / per_slice).ceil() as usize).clamp(1, (n / 3).max(1))
}

/// The steady window as a shaded band (none when the run has none).
fn steady_band(slices: &Slices) -> Vec<Band> {
    slices
        .steady
        .map(|w| Band {
            name: "steady-state window".into(),
            from: slices.origin_s + w.start_s,
            to: slices.origin_s + w.end_s,
        })
        .into_iter()
        .collect()
}

/// What rates over `k`-slice windows add to a legend name and to a chart's reading.
fn window_words(k: usize) -> (String, String) {
    if k > 1 {
        (
            format!(" (over {k}-slice windows)"),
            format!("; too few requests end in one slice for a rate, so rates are over {k} slices"),
        )
    } else {
        (String::new(), String::new())
    }
}

/// Output throughput, requests in flight, and TTFT per slice, on `0..span`, the steady
/// window shaded.
fn slice_charts(name: &str, slices: &Slices, span: f64) -> Vec<Chart> {
    if slices.slices.is_empty() {
        return Vec::new();
    }
    let step = stride(slices);
    let at = |pick: &dyn Fn(&crate::metrics::slices::Slice) -> Option<f64>| -> Vec<(f64, f64)> {
        slices
            .slices
            .iter()
            .step_by(step)
            .filter(|x| x.len_s >= slices.width_s / 2.0)
            .filter_map(|x| Some((slices.origin_s + x.start_s + x.len_s / 2.0, pick(x)?)))
            .collect()
    };
    let line = |name: String, points: Vec<(f64, f64)>| Series {
        name,
        points,
        ..Series::default()
    };
    let k = window_of(slices);
    let (over, windows_note) = window_words(k);
    let (rps, tps) = rate_points(slices, k);
    let bands = steady_band(slices);
    let chart = |title: &str, y_label: &str, series: Vec<Series>, how: &str| Chart {
        title: format!("{name}: {title}"),
        x_label: "time since the run's start (s)".into(),
        y_label: y_label.into(),
        series,
        x_range: Some((0.0, span)),
        bands: bands.clone(),
        how: how.into(),
        ..Chart::default()
    };
    vec![
        chart(
            "throughput per slice",
            "tok/s",
            vec![line(format!("output tok/s{over}"), tps)],
            &format!(
                "output tokens that arrived in each slice, per second; the shaded band is the \
                 steady-state window the run's figures are read from{windows_note}"
            ),
        ),
        chart(
            "in flight per slice",
            "requests",
            vec![
                line(
                    "requests in flight (time-weighted mean)".into(),
                    at(&|x| Some(x.in_flight)),
                ),
                line(format!("completed requests/s{over}"), rps),
            ],
            &format!(
                "requests in flight rising while completions per second stay flat means a \
                 queue is building{windows_note}"
            ),
        ),
        chart(
            "TTFT per slice",
            "ms",
            vec![
                line("TTFT p50".into(), at(&|x| x.ttft_p50_ms)),
                line("TTFT p99".into(), at(&|x| x.ttft_p99_ms)),
            ],
            "TTFT of the requests that ended in each slice; a line that climbs through the \
             run means requests wait longer and longer (queueing)",
        ),
    ]
}

/// A gauge chart: its title, y label and `(family, legend)` of its lines.
type GaugeGroup = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// The server's gauges scraped during the run (the book, metrics/telemetry.md), a chart per
/// unit, each drawn only when the server exposed one of its series.
fn gauge_charts(name: &str, series: &[TelemetrySeries], span: f64) -> Vec<Chart> {
    let groups: [GaugeGroup; 4] = [
        (
            "server requests running and waiting",
            "requests",
            &[
                (families::RUNNING, "running (in the batch)"),
                (families::WAITING, "waiting (queued)"),
            ],
        ),
        (
            "server KV-cache use",
            "fraction of the KV cache",
            &[(families::KV_CACHE_USAGE, "KV-cache use")],
        ),
        (
            "server GPU utilisation",
            "percent",
            &[(families::GPU_UTIL, "GPU utilisation (mean over GPUs)")],
        ),
        (
            "server GPU power",
            "W",
            &[(families::GPU_POWER, "power (all GPUs)")],
        ),
    ];
    groups
        .into_iter()
        .filter_map(|(title, y_label, wanted)| {
            let lines: Vec<Series> = wanted
                .iter()
                .filter_map(|(family, label)| {
                    let (_, points) = series.iter().find(|(n, _)| n == family)?;
                    Some(Series {
                        name: (*label).into(),
                        points: points.clone(),
                        markers: points.len() <= 60,
                        scatter: false,
                        labels: Vec::new(),
                    })
                })
                .collect();
            (!lines.is_empty()).then(|| Chart {
                title: format!("{name}: {title}"),
                x_label: "time since the run's start (s)".into(),
                y_label: y_label.into(),
                series: lines,
                x_range: Some((0.0, span)),
                how: "scraped from the server's /metrics during the run: the server's own \
                      gauges on its own clock, sampled (a point per scrape), aligned to the \
                      run's start"
                    .into(),
                ..Chart::default()
            })
        })
        .collect()
}
