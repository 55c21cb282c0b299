//! The user clock (`[report] clock = "user"`, `report --clock user`): every run's metrics
//! with each answer time moved to when the client read it
//! (`RequestRecord::move_to_user_clock`). A run's stored metrics were folded live on the
//! kernel's clock, so its measured rows are folded again by the one metric fold
//! (`metrics::Fold`, as `merge` and an SLA search's pools fold stored rows): once as
//! stored and once moved. The metrics the move changes (TTFT, ITL, TPOT, latency and
//! everything made of them, goodput included) take the moved fold's values; every other
//! metric (counts, server counters, client CPU, the clock's own figures) stays as stored,
//! so what the rows cannot say is never recomputed from defaults.
//!
//! Time slices, per-replica and per-class breakdowns stay on the kernel's clock.

use super::{ReportData, ReportError};
use crate::metrics::{Fold, MetricDefinitions, SummaryOptions};
use crate::record::Clock;
use crate::store::Store;

/// Moves `data`'s runs' metrics to the user clock, and says so in `data.clock`.
pub(super) fn apply(store: &Store, data: &mut ReportData) -> Result<(), ReportError> {
    let slos = super::bootstrap_capacity::slos_of(&data.suite.info.slo);
    for run in &mut data.runs {
        let definitions = MetricDefinitions::of_facts(&run.facts);
        let mut kernel = Fold::new(definitions, &slos);
        let mut user = Fold::new(definitions, &slos);
        let mut rows = 0u64;
        store.each_request_row(&run.id, |mut row| {
            rows += 1;
            kernel.add(&row.record);
            row.record.move_to_user_clock();
            user.add(&row.record);
        })?;
        if rows == 0 {
            continue;
        }
        let opts = SummaryOptions {
            definitions,
            slos: slos.clone(),
            ..SummaryOptions::default()
        };
        let (kernel, user) = (kernel.finish(&opts), user.finish(&opts));
        for (name, value) in user.values {
            if kernel.values.get(&name) != Some(&value) {
                run.metrics.insert(name, value);
            }
        }
    }
    data.clock = Clock::User;
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
