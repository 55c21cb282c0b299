//! Progress on stderr (indicatif): per run done/total, req/s, errors, ETA, and which run
//! of how many. Hidden when stderr is not a terminal; one summary line per run always.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of one run, updated from the engine's sink.
#[derive(Clone)]
pub struct RunProgress {
    bar: ProgressBar,
    errors: Arc<AtomicU64>,
}

impl RunProgress {
    pub fn new(label: &str, total: u64) -> RunProgress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} {per_sec} {msg} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label.to_string());
        RunProgress {
            bar,
            errors: Arc::new(AtomicU64::new(0)),
        }
    }

    /// One request finished.
    pub fn tick(&self, failed: bool) {
        if failed {
            let n = self.errors.fetch_add(1, Ordering::Relaxed) + 1;
            self.bar.set_message(format!("{n} errors"));
        }
        self.bar.inc(1);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
