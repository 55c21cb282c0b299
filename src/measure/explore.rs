//! An exploring run at its end: the steps its control held, folded from the stored rows as
//! a ramp's are (`time.steps`, each level under `"concurrency"`, or `"rate"` for an open
//! loop's), its ending (`time.explore`), and the knee and saturation point as the run's
//! metrics.

use std::sync::{Arc, Mutex};

use crate::metrics::explore::{knee, level_names, StoredStep, EXPLORE_NAMES};
use crate::metrics::steps::StepFold;
use crate::metrics::{MetricDefinitions, RunSummary};
use crate::planner::RunSpec;
use crate::record::facts::{ExploreFacts, TimeFacts};
use crate::store::Store;

/// The explore metrics of every run (null but for an exploring one), and an exploring
/// run's steps and ending in its time facts; a warning when the rows could not be read.
pub(crate) fn finish(
    store: &Arc<Mutex<Store>>,
    run: &RunSpec,
    shared: Option<&crate::workload::explore::Shared>,
    definitions: MetricDefinitions,
    (time, summary): (&mut TimeFacts, &mut RunSummary),
) -> Option<String> {
    for name in EXPLORE_NAMES {
        summary.values.insert(name.into(), None);
    }
    let control = shared?.lock().ok()?;
    let hardware = crate::planner::hardware_of(&run.settings);
    let mut fold = StepFold::new(control.held(), definitions, hardware);
    let read = match store.lock() {
        Ok(store) => store.each_request_row(&run.id, |row| fold.add(&row.record)),
        Err(_) => return Some("no exploring steps: the store is poisoned".into()),
    };
    if let Err(e) = read {
        return Some(format!("no exploring steps: {}", crate::control::chain(&e)));
    }
    let key = if control.by_rate() {
        "rate"
    } else {
        "concurrency"
    };
    let (knee_name, saturation_name) = level_names(control.by_rate());
    let steps = crate::metrics::steps::step_facts(fold, key);
    let stored: Vec<StoredStep> = steps
        .iter()
        .map(|s| StoredStep {
            level: s.rate.or(s.concurrency).unwrap_or(0.0),
            output_tps: s.metric("output_tps"),
            latency_p50: s.metric("latency_p50"),
        })
        .collect();
    let ending = control.outcome();
    let values = &mut summary.values;
    if let Some(k) = knee(&stored) {
        values.insert(knee_name.into(), Some(k.level));
        values.insert("knee_output_tps".into(), k.output_tps);
    }
    let saturation = ending.saturation.map(|units| control.value(units));
    if let Some(level) = saturation {
        let at = stored.iter().find(|s| s.level == level);
        values.insert(saturation_name.into(), Some(level));
        values.insert(
            "saturation_output_tps".into(),
            at.and_then(|s| s.output_tps),
        );
    }
    time.steps = Some(steps);
    time.explore = Some(ExploreFacts {
        saturation_rps: Some(saturation).filter(|_| control.by_rate()),
        saturation_concurrency: Some(ending.saturation).filter(|_| !control.by_rate()),
        reason: (ending.reason)
            .map_or("max reached still gaining throughput", |r| r.as_str())
            .into(),
    });
    None
}
