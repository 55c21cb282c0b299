//! A run's time slices read from the database (`metrics::slices`), for the HTML report's
//! charts and `perfplan report --slices` (CSV): the measured rows streamed in order of
//! their end, never held whole; the run's metric definitions and steady-state window
//! from its facts (`metric_definitions`, `time.steady`; a database from before them
//! reads as perfplan's definitions and no window).
//!
//! CSV columns, one row per slice of each run (by ordinal): `run`, `start_s`, `len_s`,
//! `ok`, `failed`, `rps`, `output_tps`, `in_flight`, `ttft_p50_ms`, `ttft_p99_ms`,
//! `itl_p50_ms`, `itl_p99_ms`, `steady` (`true` when the slice lies inside the run's
//! steady-state window). Times are seconds from the run's first measured send.

use std::time::Duration;

use serde_json::Value;

use super::ReportData;
use crate::metrics::slices::{SliceFold, Slices};
use crate::metrics::MetricDefinitions;
use crate::record::Clock;
use crate::store::{Store, StoreError, StoredRun};

/// The slices of run `run_id`, `width` wide (no slices when it measured nothing), its
/// answer times on `clock` (`report::user_clock`: on the user clock each row is moved to
/// when the client read it before it is folded; rows are read in order of their stored
/// end, so one whose read moved it past a slice already closed counts as `late`).
pub(crate) fn run_slices(
    store: &Store,
    run_id: &str,
    width: Duration,
    clock: Clock,
) -> Result<Slices, StoreError> {
    let facts = store.run_facts(run_id)?;
    let definitions = MetricDefinitions::of_facts(&facts);
    let steady = (facts.time.as_ref())
        .and_then(|t| t.steady())
        .and_then(|w| {
            let at = |s: f64| Duration::try_from_secs_f64(s).ok();
            at(w.start_s).zip(at(w.end_s))
        });
    let Some(span) = store.measured_span(run_id)? else {
        return Ok(Slices {
            width_s: width.as_secs_f64(),
            origin_s: 0.0,
            slices: Vec::new(),
            steady: None,
            late: 0,
        });
    };
    let mut fold = SliceFold::new(width, span, definitions);
    store.each_measured_row_by_end(run_id, |mut row| {
        if clock == Clock::User {
            row.record.move_to_user_clock();
        }
        fold.add(&row.record);
    })?;
    Ok(fold.finish(steady))
}

/// The suite's slice width: the plan's `[report] slice` as stored, else 1 s.
pub(crate) fn slice_width(data: &ReportData) -> Duration {
    data.suite
        .info
        .report
        .get("slice")
        .and_then(Value::as_str)
        .and_then(|s| crate::units::parse_duration(s).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(Duration::from_secs(1))
}

const HEADER: &str = "run,start_s,len_s,ok,failed,rps,output_tps,in_flight,ttft_p50_ms,\
ttft_p99_ms,itl_p50_ms,itl_p99_ms,steady";

fn opt(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(String::new, |v| v.to_string())
}

/// Every run's slices as CSV, `width` wide (default: `slice_width`).
pub(crate) fn render_csv(
    store: &Store,
    data: &ReportData,
    width: Option<Duration>,
) -> Result<String, StoreError> {
    let width = width.unwrap_or_else(|| slice_width(data));
    let mut out = format!("{HEADER}\n");
    for run in &data.runs {
        write_run(
            &mut out,
            run,
            &run_slices(store, &run.id, width, data.clock)?,
        );
    }
    Ok(out)
}

fn write_run(out: &mut String, run: &StoredRun, s: &Slices) {
    for x in &s.slices {
        let steady = s
            .steady
            .is_some_and(|w| w.start_s <= x.start_s && x.start_s + x.len_s <= w.end_s);
        let fields = [
            run.id.clone(),
            x.start_s.to_string(),
            x.len_s.to_string(),
            x.ok.to_string(),
            x.failed.to_string(),
            x.rps.to_string(),
            x.output_tps.to_string(),
            x.in_flight.to_string(),
            opt(x.ttft_p50_ms),
            opt(x.ttft_p99_ms),
            opt(x.itl_p50_ms),
            opt(x.itl_p99_ms),
            steady.to_string(),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
}
