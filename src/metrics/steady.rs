//! The steady-state window of a run and its metrics (`*_steady`, `steady_s`).
//!
//! The rule (the book, metrics/time.md): the window opens when the load is whole and closes when
//! it starts to drain.
//!
//! - Closed loop of concurrency C: from the send of the C-th request of the measured pass
//!   (warmup requests count: they fill slots too), when every slot is busy for the first
//!   time, to the last measured send; after it the slots empty one by one.
//! - Open loop and trace: from the first completion (the server has a request done, so
//!   arrivals and departures both run) to the last measured send.
//!
//! The window never opens before the first measured send. It is unknown (its metrics
//! null, and `WindowFinder::finish` says why) when it is empty or shorter than
//! `MIN_SLICES` time slices.
//!
//! Which requests count: the distributions (TTFT, TPOT, ITL, latency) are those of the
//! measured requests *sent* inside the window (each met the whole load when it was sent);
//! the rates count the successful requests that *ended* inside it and the output tokens
//! that arrived inside it (`slices::token_times`, the slices' rule), over its length.
//! Memory is O(concurrency) to find the window and one `Fold` to read it
//! (`window_fold`, the rule a ramp's steps share).

use std::collections::{BTreeMap, BinaryHeap};
use std::time::Duration;

use super::definitions::MetricDefinitions;
use super::window_fold::{Span, WindowFold};
use crate::record::{Phase, RequestRecord};

/// A window shorter than this many time slices has no steady metrics.
pub(crate) const MIN_SLICES: u32 = 2;

/// The steady metrics and the run metric each one reads inside the window.
const FROM_RUN: [(&str, &str); 7] = [
    ("ttft_p50_steady", "ttft_p50"),
    ("ttft_p99_steady", "ttft_p99"),
    ("tpot_p50_steady", "tpot_p50"),
    ("tpot_p99_steady", "tpot_p99"),
    ("itl_p50_steady", "itl_p50"),
    ("latency_p50_steady", "latency_p50"),
    ("latency_p99_steady", "latency_p99"),
];

/// How a run's load was sent, as the window's rule reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadShape {
    Closed {
        concurrency: usize,
    },
    /// An open loop or a trace: arrivals on a schedule.
    Open,
    /// A ramp or a rate series: the load changes throughout, so no window is steady (its
    /// steps, `time.steps`, are its figures).
    Ramp,
}

/// A span of a run, on its records' time base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: Duration,
    pub end: Duration,
}

impl Window {
    pub fn len(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(&self) -> bool {
        self.len().is_zero()
    }
}

/// The steady window is closed: a request sent at its last send is in it.
impl Span for Window {
    fn holds(&self, t: Duration) -> bool {
        self.start <= t && t <= self.end
    }

    fn length(&self) -> Duration {
        self.len()
    }
}

/// Finds a run's window from its records, in any order (a live run's completion order,
/// the store's index order).
#[derive(Debug, Clone)]
pub(crate) struct WindowFinder {
    shape: LoadShape,
    /// The `concurrency` earliest sends of the pass (a max-heap: its top is the C-th).
    earliest: BinaryHeap<Duration>,
    sends: u64,
    first_end: Option<Duration>,
    /// First and last measured send.
    measured: Option<(Duration, Duration)>,
}

impl WindowFinder {
    /// Whether the load can have a steady window at all (a ramp cannot).
    pub(crate) fn can_be_steady(&self) -> bool {
        self.shape != LoadShape::Ramp
    }

    pub fn new(shape: LoadShape) -> WindowFinder {
        WindowFinder {
            shape,
            earliest: BinaryHeap::new(),
            sends: 0,
            first_end: None,
            measured: None,
        }
    }

    /// Adds one record (a priming pass has its own time base and is not read).
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase == Phase::Priming {
            return;
        }
        self.sends += 1;
        self.first_end = Some(self.first_end.map_or(r.end, |e| e.min(r.end)));
        if let LoadShape::Closed { concurrency } = self.shape {
            self.earliest.push(r.sent);
            if self.earliest.len() > concurrency.max(1) {
                self.earliest.pop();
            }
        }
        if r.phase == Phase::Measured {
            self.measured = Some(match self.measured {
                None => (r.sent, r.sent),
                Some((a, b)) => (a.min(r.sent), b.max(r.sent)),
            });
        }
    }

    /// The window, or why there is none; `slice` is the run's time-slice width.
    pub fn finish(&self, slice: Duration) -> Result<Window, String> {
        let (first, last) = self
            .measured
            .ok_or_else(|| "no measured request was sent".to_string())?;
        let opened = match self.shape {
            LoadShape::Closed { concurrency } => {
                let c = concurrency.max(1);
                if self.sends < c as u64 {
                    return Err(format!(
                        "the run sent {} requests, fewer than its concurrency {c}: no moment \
                         had every slot busy",
                        self.sends
                    ));
                }
                self.earliest.peek().copied().unwrap_or(first)
            }
            LoadShape::Open => self.first_end.unwrap_or(last),
            LoadShape::Ramp => {
                return Err(
                    "a ramp's load changes throughout, so it has no steady state: \
                            its steps are its figures (the book's \"Ramps\")"
                        .into(),
                )
            }
        };
        let window = Window {
            start: opened.max(first),
            end: last,
        };
        let min = slice * MIN_SLICES;
        if window.len() < min {
            return Err(format!(
                "the steady window is {:.3} s, shorter than {MIN_SLICES} time slices of {} \
                 (the book's \"Time\"): send more requests, or set a shorter [report] slice",
                window.len().as_secs_f64(),
                crate::units::format_duration(slice)
            ));
        }
        Ok(window)
    }
}

/// The steady metrics of a run, folded from its records (any order) once its window is
/// known: `window_fold`'s rule, a request counted by its send.
#[derive(Debug, Clone)]
pub(crate) struct SteadyFold(WindowFold<Window>);

impl SteadyFold {
    pub fn new(window: Window, definitions: MetricDefinitions) -> SteadyFold {
        SteadyFold(WindowFold::new(window, definitions))
    }

    pub fn add(&mut self, r: &RequestRecord) {
        self.0.add(r, r.sent);
    }

    /// Every steady metric (`unknown()`'s names), in the vocabulary's units.
    pub fn finish(self) -> BTreeMap<String, Option<f64>> {
        let figures = self.0.finish();
        let mut out = unknown();
        for (steady, name) in FROM_RUN {
            out.insert(
                steady.into(),
                figures.run.values.get(name).copied().flatten(),
            );
        }
        out.insert("steady_s".into(), Some(figures.len_s));
        out.insert("rps_steady".into(), figures.rps);
        out.insert("output_tps_steady".into(), figures.output_tps);
        out
    }
}

/// Every steady metric, unknown.
pub fn unknown() -> BTreeMap<String, Option<f64>> {
    FROM_RUN
        .iter()
        .map(|(steady, _)| *steady)
        .chain(["steady_s", "rps_steady", "output_tps_steady"])
        .map(|n| (n.to_string(), None))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Outcome, Usage};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// A successful request sent at `sent`, first token at `sent + ttft`, ending `lat`
    /// after `sent` with `tokens` tokens in two chunks (so its tokens count at its end).
    fn rec(phase: Phase, sent: u64, ttft: u64, lat: u64, tokens: u32) -> RequestRecord {
        RequestRecord {
            phase,
            sent: ms(sent),
            first_chunk: Some(ms(sent + ttft)),
            content_times: vec![ms(sent + ttft), ms(sent + lat)],
            end: ms(sent + lat),
            outcome: Outcome::Ok,
            usage: Usage {
                completion_tokens: Some(tokens),
                ..Usage::default()
            },
            ..RequestRecord::default()
        }
    }

    /// A closed loop of 2 slots, no warmup: requests of 1 s (TTFT 100 ms) sent at 0, 0,
    /// then as each ends: 1000, 1000, 2000, 2000, 3000, 3000 (the last sends), ending at 4 s.
    fn closed_run() -> Vec<RequestRecord> {
        let mut recs = Vec::new();
        for k in 0..4u64 {
            for slot in 0..2u64 {
                let ttft = 100 + 10 * slot + 20 * k;
                recs.push(rec(Phase::Measured, k * 1000, ttft, 1000, 11));
            }
        }
        recs
    }

    #[test]
    fn a_closed_loop_is_steady_from_the_last_slot_filled_to_the_last_send() {
        let recs = closed_run();
        let mut finder = WindowFinder::new(LoadShape::Closed { concurrency: 2 });
        recs.iter().rev().for_each(|r| finder.add(r));
        let w = finder.finish(ms(1000)).unwrap();
        assert_eq!((w.start, w.end), (ms(0), ms(3000)));
        let mut fold = SteadyFold::new(w, MetricDefinitions::Perfplan);
        recs.iter().for_each(|r| fold.add(r));
        let m = fold.finish();
        // Every request was sent in [0, 3 s]: TTFTs 100, 110, 120, 130, 140, 150, 160, 170.
        assert_eq!(m["ttft_p50_steady"], Some(135.0));
        assert!((m["ttft_p99_steady"].unwrap() - (160.0 + 0.93 * 10.0)).abs() < 1e-9);
        // TPOT (1000 − TTFT) / 10: p50 (865 / 10).
        assert!((m["tpot_p50_steady"].unwrap() - 86.5).abs() < 1e-9);
        assert_eq!(m["latency_p99_steady"], Some(1000.0));
        // Ended inside [0, 3 s]: the six that ended at 1, 2 and 3 s, over 3 s.
        assert_eq!(m["steady_s"], Some(3.0));
        assert_eq!(m["rps_steady"], Some(2.0));
        assert_eq!(m["output_tps_steady"], Some(22.0));
    }

    #[test]
    fn warmup_fills_slots_and_an_open_loop_waits_for_its_first_completion() {
        // Two warmup requests fill both slots at 0: the window opens at the first measured
        // send (1 s), not at the second measured one (also 1 s here, then 2 s).
        let mut recs = vec![
            rec(Phase::Warmup, 0, 100, 1000, 11),
            rec(Phase::Warmup, 0, 100, 1000, 11),
        ];
        recs.extend(closed_run().into_iter().map(|mut r| {
            r.sent += ms(1000);
            r.end += ms(1000);
            r
        }));
        let mut finder = WindowFinder::new(LoadShape::Closed { concurrency: 2 });
        recs.iter().for_each(|r| finder.add(r));
        let w = finder.finish(ms(500)).unwrap();
        assert_eq!((w.start, w.end), (ms(1000), ms(4000)));
        let mut open = WindowFinder::new(LoadShape::Open);
        closed_run().iter().for_each(|r| open.add(r));
        let w = open.finish(ms(500)).unwrap();
        assert_eq!((w.start, w.end), (ms(1000), ms(3000)));
    }

    #[test]
    fn a_short_or_empty_window_says_why() {
        let mut finder = WindowFinder::new(LoadShape::Closed { concurrency: 4 });
        closed_run()[..3].iter().for_each(|r| finder.add(r));
        let why = finder.finish(ms(1000)).unwrap_err();
        assert!(why.contains("fewer than its concurrency 4"), "{why}");
        let mut finder = WindowFinder::new(LoadShape::Closed { concurrency: 2 });
        closed_run().iter().for_each(|r| finder.add(r));
        let why = finder.finish(ms(2000)).unwrap_err();
        assert!(
            why.contains("3.000 s, shorter than 2 time slices of 2s"),
            "{why}"
        );
        let why = WindowFinder::new(LoadShape::Open)
            .finish(ms(1))
            .unwrap_err();
        assert!(why.contains("no measured request"), "{why}");
        assert!(unknown().values().all(Option::is_none) && unknown().len() == 10);
    }

    #[test]
    fn a_ramp_has_no_steady_window() {
        let mut f = WindowFinder::new(LoadShape::Ramp);
        for i in 0..100 {
            f.add(&RequestRecord {
                index: i,
                phase: crate::record::Phase::Measured,
                sent: Duration::from_millis(i * 10),
                end: Duration::from_millis(i * 10 + 5),
                ..RequestRecord::default()
            });
        }
        assert!(!f.can_be_steady());
        let why = f.finish(Duration::from_millis(100)).unwrap_err();
        assert!(why.contains("no steady state"), "{why}");
    }
}
