//! Metrics per step of a ramped load (the book, loads/ramps.md): the run cut into its steps'
//! windows, each read by the steady window's rule (`metrics::steady`) on a half-open
//! span [start, end): the distributions and counts are those of the measured requests
//! *planned* (intended send time) inside the step, so each request meets the step's
//! load once; the rates count the successful requests that *ended* inside it and the
//! output tokens that arrived inside it (`slices::token_times`), over its length
//! (`window_fold`, the rule the steady window shares). Each step also has the run's
//! capacity figures by the run's own rule (`capacity::capacity`) over its length: output
//! tok/s per user (over a concurrency step's level, or a rate step's mean in flight by
//! Little's law), per accelerator and the cost of a million tokens (with the endpoint's
//! `hardware`). One `Fold` per step: the memory of the run's own summary, whatever the
//! run's size.

use std::collections::BTreeMap;
use std::time::Duration;

use super::capacity::{capacity, Hardware, Throughput};
use super::definitions::MetricDefinitions;
use super::window_fold::{Span, WindowFigures, WindowFold};
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

/// The per-step capacity figures, after `STEP_METRICS` (the run's `CAPACITY_NAMES` but the
/// cost of good tokens, which needs the suite's SLOs, and the mean in flight first).
pub(crate) const STEP_CAPACITY: [&str; 5] = [
    "in_flight_mean",
    "output_tps_per_user",
    "output_tps_per_accelerator",
    "cost_per_million_output_tokens",
    "cost_per_million_total_tokens",
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
    hardware: Option<Hardware>,
}

impl StepFold {
    pub fn new(
        windows: &[StepWindow],
        definitions: MetricDefinitions,
        hardware: Option<Hardware>,
    ) -> StepFold {
        let steps = windows
            .iter()
            .map(|&window| WindowFold::new(window, definitions))
            .collect();
        StepFold { steps, hardware }
    }

    pub fn add(&mut self, r: &RequestRecord) {
        for s in &mut self.steps {
            s.add(r, r.intended);
        }
    }

    /// Every step's metrics, in order; a step's users (for tok/s per user) are its level
    /// when `by_level` (a concurrency step), else its mean in flight.
    pub fn finish(self, by_level: bool) -> Vec<StepMetrics> {
        let hardware = self.hardware;
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
                let users = by_level.then_some(window.rate);
                values.extend(step_capacity(&figures, users, hardware.as_ref()));
                StepMetrics { window, values }
            })
            .collect()
    }
}

/// A step's `STEP_CAPACITY` figures, by the run's rule over the step's length.
fn step_capacity(
    f: &WindowFigures,
    users: Option<f64>,
    hardware: Option<&Hardware>,
) -> Vec<(String, Option<f64>)> {
    let tokens = |tps: Option<f64>| tps.map(|x| x * f.len_s);
    let t = Throughput {
        duration_s: Some(f.len_s),
        output_tokens: tokens(f.output_tps),
        total_tokens: tokens(f.total_tps),
        good_output_tokens: None,
        in_flight_mean: f.in_flight,
    };
    let figures = capacity(&t, users, hardware);
    std::iter::once(("in_flight_mean", f.in_flight))
        .chain(figures)
        .filter(|(n, _)| STEP_CAPACITY.contains(n))
        .map(|(n, v)| (n.to_string(), v))
        .collect()
}

/// The folded steps as `time.steps` keeps them: each under `key`, `"rate"` (a rate
/// ramp's, an open loop's) or `"concurrency"`.
pub(crate) fn step_facts(fold: StepFold, key: &str) -> Vec<StepFacts> {
    fold.finish(key == "concurrency")
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
        let mut fold = StepFold::new(&windows, MetricDefinitions::Perfplan, None);
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
        let s = fold.finish(false);
        let v = |k: usize, n: &str| s[k].values[n].unwrap();
        assert_eq!((v(0, "requests_ok"), v(0, "requests_failed")), (2.0, 0.0));
        assert_eq!((v(1, "requests_ok"), v(1, "requests_failed")), (3.0, 1.0));
        assert_eq!(v(0, "ttft_p50"), 10.0);
        assert_eq!(v(1, "ttft_p50"), 30.0);
        // Ends: 100 ms in step 1; 1100, 1100, 1300, 1500 ms in step 2.
        assert_eq!(v(0, "rps"), 1.0);
        assert_eq!(v(1, "rps"), 4.0);
        assert_eq!(s[1].window.rate, 4.0);
        assert_eq!(s[0].values.len(), STEP_METRICS.len() + STEP_CAPACITY.len());
    }

    #[test]
    fn each_step_has_the_runs_capacity_figures() {
        let window = StepWindow {
            rate: 4.0,
            start: ms(1000),
            end: ms(2000),
        };
        let hw = Hardware {
            accelerators: Some(2),
            cost_per_hour: Some(3.6),
        };
        let fold_with = |hardware: Option<Hardware>, by_level: bool| {
            let mut fold = StepFold::new(&[window], MetricDefinitions::Perfplan, hardware);
            // Ends in the step: 1100 (200 ms), 1100, 1300, 1500 (100 ms each) and a failed
            // one at 1700 (100 ms): 0.6 s of latency in 1 s, so 0.6 in flight.
            fold.add(&rec(900, 10, 200, true));
            for at in [1000, 1200, 1400] {
                fold.add(&rec(at, 30, 100, true));
            }
            fold.add(&rec(1600, 30, 100, false));
            fold.finish(by_level).remove(0).values
        };
        let v = fold_with(Some(hw), false);
        let get = |n: &str| v[n].unwrap();
        let tps = get("output_tps");
        assert!((get("in_flight_mean") - 0.6).abs() < 1e-9);
        // A rate step's users are its mean in flight; a concurrency step's its level.
        assert!((get("output_tps_per_user") - tps / 0.6).abs() < 1e-9);
        assert_eq!(get("output_tps_per_accelerator"), tps / 2.0);
        // 3.6 an hour is 0.001 a second: a million tokens at `tps` cost 1000 / tps.
        assert!((get("cost_per_million_output_tokens") - 1000.0 / tps).abs() < 1e-9);
        // Total: 4 prompt tokens of each of the 4 successful requests that ended in it.
        let total = get("cost_per_million_total_tokens");
        assert!((total - 1000.0 / (tps + 16.0)).abs() < 1e-9, "{total}");
        let by_level = fold_with(None, true);
        assert_eq!(by_level["output_tps_per_user"], Some(tps / 4.0));
        assert_eq!(by_level["output_tps_per_accelerator"], None);
        assert_eq!(by_level["cost_per_million_output_tokens"], None);
    }
}
