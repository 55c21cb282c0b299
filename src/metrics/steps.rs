//! Metrics per step of a ramped load (the book, loads/ramps.md): the run cut into its steps'
//! windows, each read by the steady window's rule (`metrics::steady`) on a half-open
//! span [start, end): the distributions and counts are those of the measured requests
//! *planned* (intended send time) inside the step, so each request meets the step's
//! load once; the rates count the successful requests that *ended* inside it and the
//! output tokens that arrived inside it (`slices::token_times`), over its length
//! (`window_fold`, the rule the steady window shares). One `Fold` per step: the memory of
//! the run's own summary, whatever the run's size.

use std::collections::BTreeMap;
use std::time::Duration;

use super::definitions::MetricDefinitions;
use super::window_fold::{Span, WindowFold};
use crate::record::facts::StepFacts;
use crate::record::RequestRecord;

/// The per-step metrics, by their names in the one vocabulary (`metrics::names`).
pub(crate) const STEP_METRICS: [&str; 9] = [
    "requests_ok",
    "requests_failed",
    "rps",
    "output_tps",
    "ttft_p50",
    "ttft_p99",
    "tpot_p50",
    "itl_p50",
    "latency_p50",
];

/// One step's window on the records' time base, and its planned load: a rate ramp's
/// mean rate (req/s), a concurrency ramp's mean slots (requests in flight).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepWindow {
    pub rate: f64,
    pub start: Duration,
    pub end: Duration,
}

/// A step is half-open, so a request planned on a boundary is in one step only.
impl Span for StepWindow {
    fn holds(&self, t: Duration) -> bool {
        self.start <= t && t < self.end
    }

    fn length(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }
}

/// The metrics of one step.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepMetrics {
    pub window: StepWindow,
    /// `STEP_METRICS`' values, in the vocabulary's units (null when unknown).
    pub values: BTreeMap<String, Option<f64>>,
}

/// Folds a run's records (any order) into its steps: `window_fold`'s rule per step, a
/// request counted by its planned send.
#[derive(Debug, Clone)]
pub(crate) struct StepFold {
    steps: Vec<WindowFold<StepWindow>>,
}

impl StepFold {
    pub fn new(windows: &[StepWindow], definitions: MetricDefinitions) -> StepFold {
        let steps = windows
            .iter()
            .map(|&window| WindowFold::new(window, definitions))
            .collect();
        StepFold { steps }
    }

    pub fn add(&mut self, r: &RequestRecord) {
        for s in &mut self.steps {
            s.add(r, r.intended);
        }
    }

    /// Every step's metrics, in order.
    pub fn finish(self) -> Vec<StepMetrics> {
        self.steps
            .into_iter()
            .map(|s| {
                let window = s.window;
                let figures = s.finish();
                let mut values: BTreeMap<String, Option<f64>> = STEP_METRICS
                    .iter()
                    .map(|n| (n.to_string(), figures.run.values.get(*n).copied().flatten()))
                    .collect();
                values.insert("rps".into(), figures.rps);
                values.insert("output_tps".into(), figures.output_tps);
                StepMetrics { window, values }
            })
            .collect()
    }
}

/// The folded steps as `time.steps` keeps them: each under `key`, `"rate"` (a rate
/// ramp's, an open loop's) or `"concurrency"`.
pub(crate) fn step_facts(fold: StepFold, key: &str) -> Vec<StepFacts> {
    fold.finish()
        .into_iter()
        .map(|s| {
            let metrics: serde_json::Map<String, serde_json::Value> = s
                .values
                .into_iter()
                .map(|(name, v)| {
                    let value = match v {
                        // Counts are integers in JSON.
                        Some(x) if name.starts_with("requests_") => serde_json::json!(x as u64),
                        Some(x) => serde_json::json!(x),
                        None => serde_json::Value::Null,
                    };
                    (name, value)
                })
                .collect();
            let level = Some(s.window.rate);
            let by_concurrency = key == "concurrency";
            StepFacts {
                rate: level.filter(|_| !by_concurrency),
                concurrency: level.filter(|_| by_concurrency),
                start_s: s.window.start.as_secs_f64(),
                end_s: s.window.end.as_secs_f64(),
                metrics,
                rest: serde_json::Map::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Phase, Usage};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// A successful request planned and sent at `at`, TTFT `ttft`, ending `lat` later,
    /// with 2 output tokens (the first at its TTFT, the last at its end).
    fn rec(at: u64, ttft: u64, lat: u64, ok: bool) -> RequestRecord {
        RequestRecord {
            phase: Phase::Measured,
            intended: ms(at),
            sent: ms(at),
            first_chunk: Some(ms(at + ttft)),
            content_times: vec![ms(at + ttft), ms(at + lat)],
            end: ms(at + lat),
            outcome: if ok { Outcome::Ok } else { Outcome::Http },
            usage: Usage {
                completion_tokens: Some(2),
                prompt_tokens: Some(4),
                ..Usage::default()
            },
            ..RequestRecord::default()
        }
    }

    #[test]
    fn each_step_reads_its_own_requests() {
        let windows = [
            StepWindow {
                rate: 2.0,
                start: ms(0),
                end: ms(1000),
            },
            StepWindow {
                rate: 4.0,
                start: ms(1000),
                end: ms(2000),
            },
        ];
        let mut fold = StepFold::new(&windows, MetricDefinitions::Perfplan);
        // Step 1: two requests of TTFT 10 ms; step 2: four of TTFT 30 ms, one failed.
        // The one planned at 900 ms ends at 1100 ms: counted in step 1's TTFT, step 2's rps.
        for r in [rec(0, 10, 100, true), rec(900, 10, 200, true)] {
            fold.add(&r);
        }
        for at in [1000, 1200, 1400] {
            fold.add(&rec(at, 30, 100, true));
        }
        fold.add(&rec(1600, 30, 100, false));
        let mut warm = rec(1700, 1, 2, true);
        warm.phase = Phase::Warmup;
        fold.add(&warm);
        let s = fold.finish();
        let v = |k: usize, n: &str| s[k].values[n].unwrap();
        assert_eq!((v(0, "requests_ok"), v(0, "requests_failed")), (2.0, 0.0));
        assert_eq!((v(1, "requests_ok"), v(1, "requests_failed")), (3.0, 1.0));
        assert_eq!(v(0, "ttft_p50"), 10.0);
        assert_eq!(v(1, "ttft_p50"), 30.0);
        // Ends: 100 ms in step 1; 1100, 1100, 1300, 1500 ms in step 2.
        assert_eq!(v(0, "rps"), 1.0);
        assert_eq!(v(1, "rps"), 4.0);
        assert_eq!(s[1].window.rate, 4.0);
        assert_eq!(s[0].values.len(), STEP_METRICS.len());
    }
}
