//! Progress on stderr (indicatif): per run done/total, req/s, errors, ETA, and which run
//! of how many. Hidden when stderr is not a terminal; one summary line per run always.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::log::SuiteLog;

/// How often a `--progress-json` progress event is written during a run.
const EVENT_EVERY: Duration = Duration::from_secs(1);

/// Progress of one run, updated from the engine's sink.
#[derive(Clone)]
pub struct RunProgress {
    bar: ProgressBar,
    errors: Arc<AtomicU64>,
    events: Option<Events>,
}

#[derive(Clone)]
struct Events {
    log: Arc<SuiteLog>,
    run_id: String,
    start: Instant,
    last: Arc<Mutex<Instant>>,
}

impl RunProgress {
    /// With `--progress-json`, also a progress event at most once a second.
    pub fn with_events(mut self, log: &Arc<SuiteLog>, run_id: &str) -> RunProgress {
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
            errors: Arc::new(AtomicU64::new(0)),
            events: None,
        }
    }

    /// One request finished.
    pub fn tick(&self, failed: bool) {
        if failed {
            let n = self.errors.fetch_add(1, Ordering::Relaxed) + 1;
            self.bar.set_message(format!("{n} errors"));
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
                    "errors": self.errors.load(Ordering::Relaxed),
                    "elapsed_s": ev.start.elapsed().as_secs_f64(),
                }));
            }
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
