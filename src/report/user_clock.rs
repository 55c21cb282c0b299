//! The user clock (`[report] clock = "user"`, `--clock user` of `report` and `compare`):
//! every run's metrics with each answer time moved to when the client read it
//! (`RequestRecord::move_to_user_clock`). A run's stored metrics were folded live on the
//! kernel's clock, so its measured rows are folded again by the one metric fold
//! (`metrics::Fold`, as `merge` and an SLA search's pools fold stored rows): once as
//! stored and once moved. The metrics the move changes (TTFT, ITL, TPOT, latency and
//! everything made of them, goodput included) take the moved fold's values; every other
//! metric (counts, server counters, client CPU, the clock's own figures) stays as stored,
//! so what the rows cannot say is never recomputed from defaults.
//!
//! One clock for everything a command judges: the pivot, the gates (the baseline's runs
//! moved too) and `compare`'s deltas and noise samples; a mix's per-class metrics move
//! with the run's; time slices and the per-replica breakdown move their rows
//! (`slices::run_slices`, `replicas::render_csv`), and so do the HTML page's per-request
//! plots (`plots::Digest::of_run`).

use serde_json::Value;

use super::{ReportData, ReportError};
use crate::metrics::{Fold, MetricDefinitions, SummaryOptions};
use crate::record::Clock;
use crate::store::{Store, StoredRun};

/// The clock a command uses: the one it was given (`--clock`), else the plan's
/// `[report] clock` as stored with the suite, else the kernel's.
pub(crate) fn chosen(given: Option<Clock>, report: &Value) -> Clock {
    given.or_else(|| of_plan(report)).unwrap_or(Clock::Kernel)
}

/// The plan's `[report] clock` as stored (`None` when it names none, or one that no longer
/// reads).
pub(crate) fn of_plan(report: &Value) -> Option<Clock> {
    report
        .get("clock")
        .and_then(Value::as_str)
        .and_then(Clock::parse)
}

/// Moves `data`'s runs' metrics to the user clock, and says so in `data.clock`.
pub(super) fn apply(store: &Store, data: &mut ReportData) -> Result<(), ReportError> {
    move_runs(store, &mut data.runs, &data.suite.info.slo)?;
    data.clock = Clock::User;
    Ok(())
}

/// Moves the metrics of `runs` (stored in `store`, whose suite's `[slo]` is `slo`) to the
/// user clock: the run's own and, for a mix, each class's (`name@class`) it stored.
pub(super) fn move_runs(
    store: &Store,
    runs: &mut [StoredRun],
    slo: &Value,
) -> Result<(), ReportError> {
    let slos = super::bootstrap_capacity::slos_of(slo);
    for run in runs {
        let definitions = MetricDefinitions::of_facts(&run.facts);
        let classes: Vec<String> = super::classes::of_run(run)
            .into_iter()
            .map(|c| c.name)
            .collect();
        let pair = || (Fold::new(definitions, &slos), Fold::new(definitions, &slos));
        let mut whole = pair();
        let mut by_class: Vec<(Fold, Fold)> = classes.iter().map(|_| pair()).collect();
        let mut rows = 0u64;
        store.each_request_row(&run.id, |mut row| {
            rows += 1;
            let class = row.record.class.map(usize::from);
            let mut folds: Vec<&mut (Fold, Fold)> = vec![&mut whole];
            folds.extend(class.and_then(|c| by_class.get_mut(c)));
            for (kernel, _) in &mut folds {
                kernel.add(&row.record);
            }
            row.record.move_to_user_clock();
            for (_, user) in &mut folds {
                user.add(&row.record);
            }
        })?;
        if rows == 0 {
            continue;
        }
        let opts = SummaryOptions {
            definitions,
            slos: slos.clone(),
            ..SummaryOptions::default()
        };
        let moved = |(kernel, user): (Fold, Fold)| {
            let (kernel, user) = (kernel.finish(&opts), user.finish(&opts));
            user.values
                .into_iter()
                .filter(move |(name, value)| kernel.values.get(name) != Some(value))
        };
        for (name, value) in moved(whole) {
            run.metrics.insert(name, value);
        }
        for (class, folds) in classes.iter().zip(by_class) {
            for (name, value) in moved(folds) {
                let name = crate::metrics::names::class_metric(&name, class);
                if run.metrics.contains_key(&name) {
                    run.metrics.insert(name, value);
                }
            }
        }
    }
    Ok(())
}

/// The table's line that says which clock its times are on.
pub(super) fn line(clock: Clock) -> &'static str {
    match clock {
        Clock::Kernel => {
            "answer times: when the bytes arrived (kernel receive stamps where the run had \
             them; --clock user: when the client read them)\n"
        }
        Clock::User => {
            "answer times: when the client read them (--clock user; metrics recomputed \
             from the rows)\n"
        }
    }
}
