//! Several trials of an SLA search step as one sample: each trial's times are moved so
//! that its first measured request starts where the previous trial's last one ended.
//! Throughputs are then over the summed measured durations, and every percentile is
//! over all requests. Warmup and priming records are left out. `Pool` folds the trials
//! as they are read (each trial read twice: its span, then its records), so a step holds
//! no trial's records; `pool` gives the pooled records of trials already in memory.

use std::time::Duration;

use crate::metrics::{Fold, MetricDefinitions, RunSummary, Slo, SummaryOptions};
use crate::record::{Phase, RequestRecord};

/// Where a trial's measured requests start and end, and the shift that moves them.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    start: Option<Duration>,
    end: Duration,
}

impl Span {
    fn add(&mut self, r: &RequestRecord) {
        if r.phase != Phase::Measured {
            return;
        }
        let start = r.sent.min(r.intended);
        self.start = Some(self.start.map_or(start, |s| s.min(start)));
        self.end = self.end.max(r.end);
    }

    /// `r` moved to begin at `at` (the pooled time so far).
    fn shifted(&self, r: &RequestRecord, at: Duration) -> RequestRecord {
        let start = self.start.unwrap_or_default();
        let mut r = r.clone();
        r.map_times(|t| t.saturating_sub(start) + at);
        r
    }

    fn length(&self) -> Duration {
        self.start
            .map_or(Duration::ZERO, |s| self.end.max(s).saturating_sub(s))
    }
}

/// The pooled metrics of a search step, trial by trial.
#[derive(Debug)]
pub struct Pool {
    fold: Fold,
    at: Duration,
}

impl Pool {
    pub fn new(definitions: MetricDefinitions, slos: &[Slo]) -> Pool {
        Pool {
            fold: Fold::new(definitions, slos),
            at: Duration::ZERO,
        }
    }

    /// Adds one trial: `each` calls its argument with every record of the trial, and is
    /// called twice (the span first, then the records to fold).
    pub(crate) fn add_trial<E>(
        &mut self,
        mut each: impl FnMut(&mut dyn FnMut(&RequestRecord)) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut span = Span::default();
        each(&mut |r| span.add(r))?;
        if span.start.is_none() {
            return Ok(());
        }
        let (fold, at) = (&mut self.fold, self.at);
        each(&mut |r| {
            if r.phase == Phase::Measured {
                fold.add(&span.shifted(r, at));
            }
        })?;
        self.at += span.length();
        Ok(())
    }

    pub fn finish(self, opts: &SummaryOptions) -> RunSummary {
        self.fold.finish(opts)
    }
}

/// The measured records of `trials` pooled as one sample (indices renumbered).
pub fn pool(trials: Vec<Vec<RequestRecord>>) -> Vec<RequestRecord> {
    let mut out: Vec<RequestRecord> = Vec::new();
    let mut at = Duration::ZERO;
    for trial in trials {
        let mut span = Span::default();
        trial.iter().for_each(|r| span.add(r));
        if span.start.is_none() {
            continue;
        }
        for r in trial.iter().filter(|r| r.phase == Phase::Measured) {
            let mut r = span.shifted(r, at);
            r.index = out.len() as u64;
            out.push(r);
        }
        at += span.length();
    }
    out
}
