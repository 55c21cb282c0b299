//! Over-saturation in a suite: a run's own cancel, which its stop (`measure::saturation`,
//! `stop_when = "saturated"`) triggers when the rule fires, and the tiers skipped above a
//! stopped one (`on_saturation = "skip_higher"`), stored as done with a note, on
//! `--resume` too (the stopped run is read back from the store).

use super::{run_label, Suite};
use crate::engine::CancelHandle;
use crate::measure::saturation::{record_stop, stopped_on_saturation, SaturationStop};
use crate::planner::saturation::Tier;
use crate::planner::RunSpec;
use crate::record::facts::{SaturationStopFacts, SkippedFacts};
use crate::record::RunFacts;
use crate::store::{RunFinish, RunStatus};
use crate::suite::execute::RunResult;
use crate::suite::SuiteError;
use crate::trust::{Code, RunWarning, Severity};

/// One run's own cancel (the suite's Ctrl-C triggers it) and its stop on saturation,
/// which triggers it too.
pub(crate) struct RunStop {
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
        let on_fire = cancel.clone();
        let watch = SaturationStop::of(run, width, move || on_fire.cancel());
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
    /// facts keeping the stop, and the `saturated` warning.
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
        let cut = crate::measure::judge::cut_by_stop(&result.summary);
        record_stop(&s, cut, &mut result.time, &mut result.warnings);
    }
}

/// A tier stopped on saturation that skips the higher ones.
#[derive(Debug, Clone)]
pub(crate) struct StoppedTier {
    tier: Tier,
    id: String,
    label: String,
}

impl Suite<'_> {
    /// Whether `run` (done) stopped on saturation with `skip_higher`: its tier.
    pub(super) fn stopped_tier(
        &self,
        run: &RunSpec,
        total: usize,
    ) -> Result<Option<StoppedTier>, SuiteError> {
        if !run.load.skips_higher {
            return Ok(None);
        }
        let Some(tier) = run.tier() else {
            return Ok(None);
        };
        let facts = self.lock()?.run_facts(&run.id)?;
        Ok(stopped_on_saturation(&facts).then(|| StoppedTier {
            tier,
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
    ) -> Result<bool, SuiteError> {
        let Some(tier) = run.tier() else {
            return Ok(false);
        };
        let Some(by) = stopped.iter().find(|t| {
            t.tier.key == tier.key && t.tier.closed == tier.closed && t.tier.level < tier.level
        }) else {
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
                facts: &RunFacts {
                    skipped: Some(SkippedFacts {
                        reason: SaturationStopFacts::SATURATED.into(),
                        by: by.id.clone(),
                    }),
                    ..RunFacts::default()
                },
                warnings: &[RunWarning::new(Code::Saturated, note).with_severity(Severity::Info)],
                error: None,
                verdict: None,
            },
        )?;
        Ok(true)
    }
}
