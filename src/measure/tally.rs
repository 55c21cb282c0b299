//! What a run's result is made of, folded record by record as the writer stores them, so
//! that no stage keeps a run's records: the metrics (`metrics::Fold`), the cold-run leak
//! check's first wave, the planned hit ratio, the steady-state window, the three-way input lengths, the first errors the warnings quote,
//! and a multi-turn run's per-turn samples. The priming pass's records are not folded
//! (no metric reads them).

use std::sync::Arc;

use super::cache::LeakWatch;
use super::planned::PlannedWatch;
use crate::metrics::input_lengths::Lengths;
use crate::metrics::steady::{LoadShape, WindowFinder};
use crate::metrics::turns::TurnSample;
use crate::metrics::{Fold, MetricDefinitions, RunSummary, Slo, SummaryOptions};
use crate::record::{Outcome, Phase, RequestRecord};
use crate::trust::{Evidence, EvidenceFold};
use crate::workload::prepare::Targets;

/// How a run's records are folded.
#[derive(Debug, Clone)]
pub(crate) struct TallySettings {
    pub definitions: MetricDefinitions,
    pub slos: Vec<Slo>,
    /// Requests sent at once when the run starts (a closed loop's concurrency; 1 for an
    /// open loop): the first wave the leak check reads.
    pub first_wave: usize,
    /// How the load is sent, for the steady-state window's rule.
    pub shape: LoadShape,
    /// A multi-turn run: keep each turn's sample for the per-turn metrics.
    pub turns: bool,
    pub targets: Arc<Targets>,
    /// What the run's prompts share (the planned hit ratio's inputs), and whether a
    /// priming pass sent them all before.
    pub sharing: Option<crate::dataset::RunSharing>,
    /// The server's cache block size, when known: shared tokens count in whole blocks.
    pub block_size: Option<u32>,
    pub warm: bool,
    /// A mix's classes (0 for a run that is not a mix): each gets its own fold.
    pub classes: usize,
    /// The thresholds the run's evidence is folded under (`[trust]`).
    pub trust: crate::trust::Thresholds,
}

impl Default for TallySettings {
    fn default() -> Self {
        TallySettings {
            definitions: MetricDefinitions::default(),
            slos: Vec::new(),
            first_wave: 1,
            shape: LoadShape::Open,
            turns: false,
            targets: Arc::default(),
            sharing: None,
            block_size: None,
            warm: false,
            classes: 0,
            trust: crate::trust::Thresholds::default(),
        }
    }
}

/// The folded state of one run.
#[derive(Debug)]
pub(crate) struct Tally {
    fold: Fold,
    pub leak: LeakWatch,
    pub planned: PlannedWatch,
    lengths: Lengths,
    targets: Arc<Targets>,
    pub errors: FirstErrors,
    /// The steady-state window, found as the records arrive.
    pub window: WindowFinder,
    /// Measured successful turns of a multi-turn run.
    pub turns: Option<Vec<TurnSample>>,
    /// A mix: each class's own fold, by class index.
    classes: Vec<Fold>,
    /// What the records say of the run's trustworthiness (the verdict's evidence).
    evidence: EvidenceFold,
}

/// The first errors of the measured requests, in the order their records arrived.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct FirstErrors {
    /// The first failed request's error (its outcome when it has no message).
    pub failure: Option<String>,
    /// The first error message of any measured request.
    pub error: Option<String>,
}

impl FirstErrors {
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase != Phase::Measured {
            return;
        }
        if self.failure.is_none() && r.outcome != Outcome::Ok {
            self.failure = Some(
                r.error
                    .clone()
                    .unwrap_or_else(|| r.outcome.as_str().to_string()),
            );
        }
        if self.error.is_none() {
            self.error.clone_from(&r.error);
        }
    }
}

impl Tally {
    pub fn new(settings: TallySettings) -> Tally {
        Tally {
            fold: Fold::new(settings.definitions, &settings.slos),
            leak: LeakWatch::new(settings.first_wave),
            planned: PlannedWatch::new(settings.sharing, settings.warm)
                .with_block_size(settings.block_size),
            lengths: Lengths::default(),
            targets: settings.targets,
            errors: FirstErrors::default(),
            window: WindowFinder::new(settings.shape),
            turns: settings.turns.then(Vec::new),
            classes: (0..settings.classes)
                .map(|_| Fold::new(settings.definitions, &settings.slos))
                .collect(),
            evidence: EvidenceFold::new(&settings.trust),
        }
    }

    /// Folds one record (after the writer has counted its tokens).
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase == Phase::Priming {
            return;
        }
        self.fold.add(r);
        self.evidence.add(r);
        if let Some(fold) = r.class.and_then(|c| self.classes.get_mut(usize::from(c))) {
            fold.add(r);
        }
        self.leak.add(r);
        self.planned.add(r);
        self.lengths.add(r, self.targets.get(r.item));
        self.errors.add(r);
        self.window.add(r);
        if let Some(turns) = &mut self.turns {
            turns.extend(TurnSample::of(r));
        }
    }

    /// The run's metrics.
    pub fn summary(&mut self, opts: &SummaryOptions) -> RunSummary {
        let fold = std::mem::replace(&mut self.fold, Fold::new(opts.definitions, &opts.slos));
        fold.finish(opts)
    }

    /// Each class's metrics, by class index (empty for a run that is not a mix), its
    /// planned shares its own. Rates count over the class's own requests, first send to
    /// last end.
    pub(crate) fn class_summaries(&mut self, opts: &SummaryOptions) -> Vec<RunSummary> {
        std::mem::take(&mut self.classes)
            .into_iter()
            .enumerate()
            .map(|(c, fold)| {
                let planned = self.planned.class_planned(c);
                fold.finish(&SummaryOptions {
                    planned_prefix_share: planned.prefix_share,
                    planned_template_share: planned.template_share,
                    ..opts.clone()
                })
            })
            .collect()
    }

    /// The run's evidence (folding starts over).
    pub fn evidence(&mut self) -> Evidence {
        let rules = EvidenceFold::new(&crate::trust::Thresholds::default());
        std::mem::replace(&mut self.evidence, rules).finish()
    }

    /// The three-way input lengths and their warning (see `lengths`).
    pub fn input_lengths(&self) -> (crate::record::facts::InputLengthFacts, Option<String>) {
        self.lengths.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_errors_are_the_first_measured_ones() {
        let rec = |phase, outcome, error: Option<&str>| RequestRecord {
            phase,
            outcome,
            error: error.map(str::to_string),
            ..RequestRecord::default()
        };
        let mut f = FirstErrors::default();
        f.add(&rec(Phase::Warmup, Outcome::Http, Some("warm")));
        f.add(&rec(Phase::Measured, Outcome::Ok, None));
        f.add(&rec(Phase::Measured, Outcome::Timeout, None));
        f.add(&rec(Phase::Measured, Outcome::Http, Some("500")));
        assert_eq!(f.failure.as_deref(), Some("timeout"));
        assert_eq!(f.error.as_deref(), Some("500"));
    }
}
