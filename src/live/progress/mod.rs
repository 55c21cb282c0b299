//! Progress on stderr: per run done/total, req/s, errors, ETA, and which run of how many.
//! On a terminal, an indicatif bar; where stderr is not a terminal (CI, `nohup`), a line
//! every `--progress-every` (default 10 s; `0` or `off` for none) to stderr and
//! `perfplan.log`: the run's label, done/total, ok/failed, the rate over the last
//! interval and the TTFT p50 so far (`ttft::TtftHistogram`, perfplan's TTFT of the
//! successful measured requests). The lines come from a timer thread of their own, so a
//! stalled server still gets its lines. The engine's sink pays a few relaxed atomic adds
//! per request, never a lock (`--progress-json` keeps its once-a-second event).

mod ttft;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::log::SuiteLog;
use crate::record::{Outcome, Phase, RequestRecord};
use ttft::TtftHistogram;

/// How often a `--progress-json` progress event is written during a run.
const EVENT_EVERY: Duration = Duration::from_secs(1);

/// The interval of progress lines when stderr is not a terminal and none is given.
pub(crate) const DEFAULT_EVERY: Duration = Duration::from_secs(10);

/// The interval of progress lines: `flag` as given (`Some(ZERO)`: none), else every
/// `DEFAULT_EVERY` when stderr is not a terminal and none on a terminal (its bar shows).
pub(crate) fn line_interval(flag: Option<Duration>) -> Option<Duration> {
    match flag {
        Some(d) => (!d.is_zero()).then_some(d),
        None => (!std::io::stderr().is_terminal()).then_some(DEFAULT_EVERY),
    }
}

/// Parses `--progress-every`: a duration, `0` or `off`.
pub fn parse_every(text: &str) -> Result<Duration, String> {
    if text.trim() == "off" {
        return Ok(Duration::ZERO);
    }
    crate::units::parse_duration(text).map_err(|e| format!("{e}, or `off`"))
}

/// What the sink counts and the timer reads.
#[derive(Debug, Default)]
struct Counts {
    done: AtomicU64,
    failed: AtomicU64,
    /// Requests the client cancelled (the load's `cancel`, a stop): not failures.
    cancelled: AtomicU64,
    ttft: TtftHistogram,
}

/// Progress of one run, updated from the engine's sink.
#[derive(Clone)]
pub(crate) struct RunProgress {
    bar: ProgressBar,
    counts: Arc<Counts>,
    events: Option<Events>,
    lines: Option<Arc<Lines>>,
}

#[derive(Clone)]
struct Events {
    log: Arc<SuiteLog>,
    run_id: String,
    start: Instant,
    last: Arc<Mutex<Instant>>,
}

/// The timer thread of the progress lines: stopped by dropping its sender.
struct Lines {
    stop: Mutex<Option<mpsc::Sender<()>>>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl RunProgress {
    /// With `--progress-json`, also a progress event at most once a second.
    pub(crate) fn with_events(mut self, log: &Arc<SuiteLog>, run_id: &str) -> RunProgress {
        if log.wants_events() {
            let now = Instant::now();
            self.events = Some(Events {
                log: log.clone(),
                run_id: run_id.to_string(),
                start: now,
                last: Arc::new(Mutex::new(now)),
            });
        }
        self
    }

    /// With the log's progress interval, a line every interval (see the module doc).
    pub(crate) fn with_lines(mut self, log: &Arc<SuiteLog>, label: &str) -> RunProgress {
        let Some(every) = log.progress_every() else {
            return self;
        };
        let (stop, rx) = mpsc::channel::<()>();
        let (log, label, bar, counts) = (
            log.clone(),
            label.to_string(),
            self.bar.clone(),
            self.counts.clone(),
        );
        let handle = std::thread::spawn(move || {
            let mut last = (Instant::now(), 0u64);
            while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                let line = line(&label, &counts, bar.length(), &mut last);
                bar.suspend(|| log.say(&line));
            }
        });
        self.lines = Some(Arc::new(Lines {
            stop: Mutex::new(Some(stop)),
            handle: Mutex::new(Some(handle)),
        }));
        self
    }

    /// A bar to `total` requests, or a counter when the run's duration ends it (`None`).
    pub fn new(label: &str, total: Option<u64>) -> RunProgress {
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
        let template = match total {
            Some(_) => "{prefix} [{bar:30}] {pos}/{len} {per_sec} {msg} eta {eta}",
            None => "{prefix} {pos} requests {per_sec} {msg} {elapsed}",
        };
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label.to_string());
        RunProgress {
            bar,
            counts: Arc::default(),
            events: None,
            lines: None,
        }
    }

    /// One request finished.
    pub(crate) fn tick(&self, r: &RequestRecord) {
        let c = &self.counts;
        c.done.fetch_add(1, Ordering::Relaxed);
        if r.outcome == Outcome::Cancelled {
            c.cancelled.fetch_add(1, Ordering::Relaxed);
        } else if r.outcome != Outcome::Ok {
            let n = c.failed.fetch_add(1, Ordering::Relaxed) + 1;
            self.bar.set_message(format!("{n} errors"));
        } else if let Some(t) = r.ttft().filter(|_| r.phase == Phase::Measured) {
            c.ttft.record(t);
        }
        self.bar.inc(1);
        if let Some(ev) = &self.events {
            let Ok(mut last) = ev.last.lock() else { return };
            if last.elapsed() >= EVENT_EVERY {
                *last = Instant::now();
                ev.log.event(serde_json::json!({
                    "event": "progress",
                    "run": ev.run_id,
                    "done": self.bar.position(),
                    "total": self.bar.length(),
                    "errors": c.failed.load(Ordering::Relaxed),
                    "elapsed_s": ev.start.elapsed().as_secs_f64(),
                }));
            }
        }
    }

    /// Stops the bar and the lines (waiting for the timer thread).
    pub fn finish(&self) {
        if let Some(lines) = &self.lines {
            lines.stop.lock().map(|mut s| s.take()).ok();
            let handle = lines.handle.lock().ok().and_then(|mut h| h.take());
            if let Some(h) = handle {
                let _ = h.join();
            }
        }
        self.bar.finish_and_clear();
    }
}

/// One progress line; `last` is the previous line's instant and count (for the rate).
fn line(label: &str, c: &Counts, total: Option<u64>, last: &mut (Instant, u64)) -> String {
    let done = c.done.load(Ordering::Relaxed);
    let failed = c.failed.load(Ordering::Relaxed).min(done);
    let cut = c.cancelled.load(Ordering::Relaxed).min(done - failed);
    let cancelled = match cut {
        0 => String::new(),
        n => format!(", {n} cancelled"),
    };
    let secs = last.0.elapsed().as_secs_f64().max(1e-9);
    let rate = done.saturating_sub(last.1) as f64 / secs;
    *last = (Instant::now(), done);
    let of = total.map_or_else(|| format!("{done} done"), |t| format!("{done}/{t} done"));
    let ttft = c
        .ttft
        .p50_ms()
        .map_or_else(|| "none yet".to_string(), |ms| format!("~{ms:.1} ms"));
    format!(
        "progress {label}: {of} ({} ok, {failed} failed{cancelled}), {rate:.1} req/s over the last \
         {secs:.1} s, TTFT p50 {ttft}",
        done - failed - cut
    )
}
