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
use super::svg::{escape, line_chart, Chart, Series};
use super::timeline::timeline_svg;
use super::ReportData;
use crate::metrics::slices::Slices;
use crate::store::{Store, StoreError, StoredRun, TelemetrySeries};
use crate::telemetry::families;

/// Most slices one chart draws.
const MAX_SLICE_POINTS: usize = 600;

/// The section: one `<details>` per run that sent requests (the first open).
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
        let slices = run_slices(store, &run.id, width)?;
        let span = digest.timeline.span.max(slices_end(&slices));
        let _ = write!(
            s,
            "<details class=\"run\"{}><summary>{}</summary><div class=\"charts\">",
            if first { " open" } else { "" },
            escape(&name)
        );
        let _ = write!(
            s,
            "<figure>{}</figure>",
            timeline_svg(&format!("{name}: requests"), &digest.timeline, span)
        );
        let gauges = store.telemetry_series(&run.id)?;
        for chart in slice_charts(&name, &slices, span)
            .into_iter()
            .chain(gauge_charts(&name, &gauges, span))
        {
            let _ = write!(s, "<figure>{}</figure>", line_chart(&chart));
        }
        s.push_str("</div>");
        s.push_str(&slices_note(run, &slices));
        s.push_str("</details>");
        first = false;
    }
    Ok(s)
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
        None => match run
            .extras
            .pointer("/time/steady_missing")
            .and_then(|v| v.as_str())
        {
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

/// Output throughput, requests in flight, and TTFT per slice, on `0..span`.
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
            // A last slice cut short holds a few requests over a sliver of time: its
            // rates would spike, so a slice under half the width is not drawn.
            .filter(|x| x.len_s >= slices.width_s / 2.0)
            .filter_map(|x| Some((slices.origin_s + x.start_s + x.len_s / 2.0, pick(x)?)))
            .collect()
    };
    let line = |name: &str, points: Vec<(f64, f64)>| Series {
        name: name.into(),
        points,
        markers: false,
        labels: Vec::new(),
    };
    let chart = |title: &str, y_label: &str, series: Vec<Series>| Chart {
        title: format!("{name}: {title}"),
        x_label: "time since the run's start (s)".into(),
        y_label: y_label.into(),
        series,
        x_range: Some((0.0, span)),
    };
    let mut tps = vec![line("output tok/s", at(&|x| Some(x.output_tps)))];
    let mut flight = vec![
        line(
            "requests in flight (time-weighted mean)",
            at(&|x| Some(x.in_flight)),
        ),
        line("completed requests/s", at(&|x| Some(x.rps))),
    ];
    let mut ttft = vec![
        line("TTFT p50", at(&|x| x.ttft_p50_ms)),
        line("TTFT p99", at(&|x| x.ttft_p99_ms)),
    ];
    for series in [&mut tps, &mut flight, &mut ttft] {
        if let Some(band) = steady_band(slices, series) {
            series.push(band);
        }
    }
    vec![
        chart("throughput per slice", "tok/s", tps),
        chart("in flight per slice", "requests", flight),
        chart("TTFT per slice", "ms", ttft),
    ]
}

/// A gauge chart: its title, y label and `(family, legend)` of its lines.
type GaugeGroup = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// The server's gauges scraped during the run (README, "Server telemetry"), a chart per
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
            })
        })
        .collect()
}

/// The steady window as an outline from 0 to the series' highest value.
fn steady_band(slices: &Slices, series: &[Series]) -> Option<Series> {
    let w = slices.steady?;
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let (a, b) = (slices.origin_s + w.start_s, slices.origin_s + w.end_s);
    Some(Series {
        name: "steady-state window".into(),
        points: vec![(a, 0.0), (a, top), (b, top), (b, 0.0)],
        markers: false,
        labels: Vec::new(),
    })
}
