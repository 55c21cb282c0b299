//! Over-saturation in a suite: a run's stop (`stop_when = "saturated"`: the rule of
//! `metrics::saturation` fed each record of its pass, and the run's own cancel triggered
//! when it fires), the stop stored with the run (`time.stopped`, a `saturated` warning),
//! and the tiers skipped above a stopped one (`on_saturation = "skip_higher"`), stored as
//! done with a note, on `--resume` too (the stopped run is read back from the store).

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use super::{run_label, Suite};
use crate::engine::CancelHandle;
use crate::metrics::saturation::{Rule, Saturation, SaturationWatch};
use crate::plan::{OnSaturation, StopWhen};
use crate::planner::{Load, RunSpec};
use crate::record::RequestRecord;
use crate::store::{RunFinish, RunStatus};
use crate::suite::execute::RunResult;
use crate::suite::RunnerError;
use crate::trust::{Code, RunWarning, Severity};

/// The stop of one run: its watch, and the run's own cancel it triggers.
#[derive(Debug)]
pub struct SaturationStop {
    watch: Mutex<SaturationWatch>,
    cancel: CancelHandle,
}

impl SaturationStop {
    /// The stop of `run`, when it asks for one: slices of `width` (`[report] slice`).
    pub fn of(run: &RunSpec, cancel: &CancelHandle, width: Duration) -> Option<SaturationStop> {
        (run.settings.load.stop_when == Some(StopWhen::Saturated)).then(|| SaturationStop {
            watch: Mutex::new(SaturationWatch::new(Rule::default(), width)),
            cancel: cancel.clone(),
        })
    }

    /// A completed record; the run's cancel once the rule fires.
    pub fn observe(&self, r: &RequestRecord) {
        let fired = match self.watch.lock() {
            Ok(mut watch) => watch.observe(r),
            Err(_) => None,
        };
        if fired.is_some() {
            self.cancel.cancel();
        }
    }

    pub fn fired(&self) -> Option<Saturation> {
        self.watch.lock().ok().and_then(|w| w.fired())
    }
}

/// Tells the run's stop, if it has one, a completed record.
pub fn observe(stop: Option<&SaturationStop>, r: &RequestRecord) {
    if let Some(stop) = stop {
        stop.observe(r);
    }
}

/// The key of the stored stop in a run's `time` extras.
const STOPPED: &str = "stopped";

/// One run's own cancel (the suite's Ctrl-C triggers it) and its stop on saturation,
/// which triggers it too.
pub struct RunStop {
    pub cancel: CancelHandle,
    pub watch: Option<SaturationStop>,
    /// `stop_when` asked for under `--shard`: not applied (each shard sees only its share,
    /// and shards must run the same tiers), said in the run's warnings.
    unwatched: bool,
    _forward: crate::engine::ChildGuard,
}

impl Suite<'_> {
    /// The stop of `run` in this suite.
    pub(super) fn run_stop(&self, run: &RunSpec) -> RunStop {
        let (cancel, forward) = self.cancel.child();
        let width = self.plan.spec.report.slice_width();
        let watch = SaturationStop::of(run, &cancel, width);
        let unwatched = watch.is_some() && self.shard.is_some();
        RunStop {
            watch: watch.filter(|_| !unwatched),
            cancel,
            unwatched,
            _forward: forward,
        }
    }
}

impl RunStop {
    /// Marks a run its stop ended: not interrupted (unless the suite was), its `time`
    /// extras keeping the stop, and the `saturated` warning.
    pub fn mark(&self, suite_cancelled: bool, result: &mut RunResult) {
        if self.unwatched {
            result.warnings.push(RunWarning::new(
                Code::Load,
                "stop_when = \"saturated\" is not applied under --shard (each shard sees only \
                 its share of the load, and every shard must run the same tiers): run the \
                 suite unsharded to stop on saturation",
            ));
        }
        let Some(s) = self.watch.as_ref().and_then(SaturationStop::fired) else {
            return;
        };
        if !suite_cancelled {
            result.cancelled = false;
        }
        let facts = json!({
            "reason": "saturated",
            "at_s": s.at_s,
            "in_flight": [s.in_flight.0, s.in_flight.1],
            "ttft_p50_ms": [s.ttft_ms.0, s.ttft_ms.1],
            "completions_per_s": [s.completions_per_s.0, s.completions_per_s.1],
        });
        match &mut result.time {
            Value::Object(map) => {
                map.insert(STOPPED.into(), facts);
            }
            other => *other = json!({ STOPPED: facts }),
        }
        result
            .warnings
            .push(RunWarning::new(Code::Saturated, s.text()));
    }
}

/// A tier stopped on saturation that skips the higher ones.
#[derive(Debug, Clone)]
pub struct StoppedTier {
    key: String,
    closed: bool,
    level: f64,
    id: String,
    label: String,
}

/// What tells a run's tier: its settings but the load (and repeat), whether it is a
/// closed loop, and its level; none for a load with no fixed level.
fn tier_of(run: &RunSpec) -> Option<(String, bool, f64)> {
    let (closed, level) = match run.load() {
        Load::Closed { concurrency } => (true, f64::from(concurrency)),
        Load::Open { rate, .. } => (false, rate),
        _ => return None,
    };
    let mut value = serde_json::to_value(&run.settings).ok()?;
    if let Value::Object(map) = &mut value {
        map.remove("load");
        map.remove("repeat");
    }
    Some((crate::planner::canonical_json(&value), closed, level))
}

impl Suite<'_> {
    /// Whether `run` (done) stopped on saturation with `skip_higher`: its tier.
    pub(super) fn stopped_tier(
        &self,
        run: &RunSpec,
        total: usize,
    ) -> Result<Option<StoppedTier>, RunnerError> {
        if run.settings.load.on_saturation != Some(OnSaturation::SkipHigher) {
            return Ok(None);
        }
        let Some((key, closed, level)) = tier_of(run) else {
            return Ok(None);
        };
        let extras = self.lock()?.run_extras(&run.id)?;
        let stopped = extras["time"][STOPPED]["reason"] == "saturated";
        Ok(stopped.then(|| StoppedTier {
            key,
            closed,
            level,
            id: run.id.clone(),
            label: run_label(run, total),
        }))
    }

    /// Skips `run` when a tier below it stopped on saturation: stored done with no
    /// requests and the note. Whether it did.
    pub(super) fn skip_above(
        &self,
        run: &RunSpec,
        total: usize,
        stopped: &[StoppedTier],
    ) -> Result<bool, RunnerError> {
        let Some((key, closed, level)) = tier_of(run) else {
            return Ok(false);
        };
        let Some(by) = stopped
            .iter()
            .find(|t| t.key == key && t.closed == closed && t.level < level)
        else {
            return Ok(false);
        };
        let note = format!(
            "skipped: a tier above {}, which stopped on saturation \
             (on_saturation = \"skip_higher\")",
            by.label
        );
        self.log
            .say(&format!("note: {}: {note}", run_label(run, total)));
        let mut store = self.lock()?;
        store.begin_run(&run.id)?;
        store.finish_run(
            &run.id,
            &RunFinish {
                status: RunStatus::Done,
                metrics: &Default::default(),
                extras: &json!({ "skipped": { "reason": "saturated", "by": by.id } }),
                warnings: &[RunWarning::new(Code::Saturated, note).with_severity(Severity::Info)],
                error: None,
                verdict: None,
            },
        )?;
        Ok(true)
    }
}
