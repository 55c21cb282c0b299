//! The requests of one window of a run, folded: the one reading rule that the
//! steady-state window (`steady`) and a ramp's steps (`steps`) share. The distributions
//! and counts are those of the measured requests whose chosen instant (the caller's: sent
//! for the steady window, planned for a step) lies inside the window; the rates count the
//! successful requests that *ended* inside it and the output tokens that arrived inside
//! it (`slices::token_times`), over its length. One `Fold`: the memory of a run's own
//! summary, whatever the run's size.

use std::time::Duration;

use super::definitions::MetricDefinitions;
use super::fold::Fold;
use super::slices::token_times;
use super::summary::{RunSummary, SummaryOptions};
use crate::record::{Outcome, Phase, RequestRecord};

/// A span of a run that knows which instants it holds (closed or half-open: its own rule).
pub trait Span: Copy {
    fn holds(&self, t: Duration) -> bool;
    fn length(&self) -> Duration;
}

/// One window's fold.
#[derive(Debug, Clone)]
pub(crate) struct WindowFold<W> {
    pub window: W,
    fold: Fold,
    ended_ok: u64,
    output_tokens: f64,
    /// Input tokens of the successful requests that ended in the window.
    ended_input_tokens: f64,
    /// Σ (end − sent) of the measured requests that ended in the window, seconds.
    ended_latency_s: f64,
}

/// What a window's requests make.
#[derive(Debug, Clone)]
pub(crate) struct WindowFigures {
    /// The summary of the requests whose instant lies in the window.
    pub run: RunSummary,
    /// The window's length, s.
    pub len_s: f64,
    /// Successful requests that ended in it, per second (`None` for an empty window).
    pub rps: Option<f64>,
    /// Output tokens that arrived in it, per second.
    pub output_tps: Option<f64>,
    /// Output tokens that arrived in it plus the input tokens of the successful requests
    /// that ended in it, per second.
    pub total_tps: Option<f64>,
    /// Mean requests in flight by Little's law: the measured requests that ended in it
    /// (any outcome), per second, × their mean latency (Σ latency ÷ its length).
    pub in_flight: Option<f64>,
}

impl<W: Span> WindowFold<W> {
    pub fn new(window: W, definitions: MetricDefinitions) -> WindowFold<W> {
        WindowFold {
            window,
            fold: Fold::new(definitions, &[]),
            ended_ok: 0,
            output_tokens: 0.0,
            ended_input_tokens: 0.0,
            ended_latency_s: 0.0,
        }
    }

    /// One record; `at` is the instant that puts it in the window (priming and warmup
    /// requests are not read).
    pub fn add(&mut self, r: &RequestRecord, at: Duration) {
        if r.phase != Phase::Measured {
            return;
        }
        if self.window.holds(at) {
            self.fold.add(r);
        }
        let ended = self.window.holds(r.end);
        if ended {
            self.ended_latency_s += r.end.saturating_sub(r.sent).as_secs_f64();
        }
        if r.outcome == Outcome::Ok {
            self.ended_ok += u64::from(ended);
            if ended {
                self.ended_input_tokens += f64::from(r.input_tokens().map_or(0, |(n, _)| n));
            }
            token_times(r, |t, n| {
                if self.window.holds(t) {
                    self.output_tokens += n;
                }
            });
        }
    }

    pub fn finish(self) -> WindowFigures {
        let len_s = self.window.length().as_secs_f64();
        let per_s = |x: f64| (len_s > 0.0).then(|| x / len_s);
        WindowFigures {
            run: self.fold.finish(&SummaryOptions::default()),
            len_s,
            rps: per_s(self.ended_ok as f64),
            output_tps: per_s(self.output_tokens),
            total_tps: per_s(self.output_tokens + self.ended_input_tokens),
            in_flight: per_s(self.ended_latency_s),
        }
    }
}
