//! A run's stop on over-saturation (`stop_when = "saturated"`): the rule of
//! `metrics::saturation` fed each record of its pass, and what the stop leaves with the
//! run (`time.stopped`, a `saturated` warning). The suite hands in what a fired rule does
//! (cancel the run) and stores the rest.

use std::sync::Mutex;
use std::time::Duration;

use crate::metrics::saturation::{Rule, Saturation, SaturationWatch};
use crate::planner::RunSpec;
use crate::record::facts::{SaturationStopFacts, TimeFacts};
use crate::record::{RequestRecord, RunFacts};
use crate::trust::{Code, RunWarning};

/// The stop of one run: its watch, and what to do once the rule fires.
pub struct SaturationStop {
    watch: Mutex<SaturationWatch>,
    on_fire: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for SaturationStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaturationStop")
            .field("watch", &self.watch)
            .finish_non_exhaustive()
    }
}

impl SaturationStop {
    /// The stop of `run`, when it asks for one: slices of `width` (`[report] slice`).
    pub fn of(
        run: &RunSpec,
        width: Duration,
        on_fire: impl Fn() + Send + Sync + 'static,
    ) -> Option<SaturationStop> {
        run.load.stops_when_saturated.then(|| SaturationStop {
            watch: Mutex::new(SaturationWatch::new(rule_of(run), width)),
            on_fire: Box::new(on_fire),
        })
    }

    /// A completed record; `on_fire` once the rule fires.
    pub fn observe(&self, r: &RequestRecord) {
        let fired = match self.watch.lock() {
            Ok(mut watch) => watch.observe(r),
            Err(_) => None,
        };
        if fired.is_some() {
            (self.on_fire)();
        }
    }

    pub(crate) fn fired(&self) -> Option<Saturation> {
        self.watch.lock().ok().and_then(|w| w.fired())
    }
}

/// The rule for `run`: an open loop at a fixed rate is judged against its arrival rate.
fn rule_of(run: &RunSpec) -> Rule {
    let arrivals_per_s = match run.load.mode {
        crate::planner::Load::Open { rate, .. } => Some(rate),
        _ => None,
    };
    Rule {
        arrivals_per_s,
        ..Rule::default()
    }
}

/// Tells the run's stop, if it has one, a completed record.
pub fn observe(stop: Option<&SaturationStop>, r: &RequestRecord) {
    if let Some(stop) = stop {
        stop.observe(r);
    }
}

/// What a fired stop leaves with its run: `time.stopped` in its time facts, and the
/// `saturated` warning.
pub(crate) fn record_stop(
    s: &Saturation,
    cut: u64,
    time: &mut TimeFacts,
    warnings: &mut Vec<RunWarning>,
) {
    time.stopped = Some(SaturationStopFacts {
        reason: SaturationStopFacts::SATURATED.into(),
        at_s: s.at_s,
        in_flight: [Some(s.in_flight.0), Some(s.in_flight.1)],
        ttft_p50_ms: [Some(s.ttft_ms.0), Some(s.ttft_ms.1)],
        completions_per_s: [Some(s.completions_per_s.0), Some(s.completions_per_s.1)],
        arrivals_per_s: s.arrivals_per_s,
        cancelled: cut,
    });
    let mut text = s.text();
    if cut > 0 {
        text.push_str(&format!(
            "; the {cut} requests in flight when it stopped were cancelled (not counted as \
             the server's failures)"
        ));
    }
    warnings.push(RunWarning::new(Code::Saturated, text));
}

/// Whether a run's stored time facts say it stopped on saturation.
pub(crate) fn stopped_on_saturation(facts: &RunFacts) -> bool {
    let stopped = facts.time.as_ref().and_then(|t| t.stopped.as_ref());
    stopped.is_some_and(|s| s.reason == SaturationStopFacts::SATURATED)
}
