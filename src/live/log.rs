//! `perfplan.log` in the output folder: every line the suite prints, and with `--debug`
//! every request body and what came back (text, finish reason, usage, error). Bodies hold
//! no secrets (keys travel in headers, which are never logged), and every line passes the
//! plan's `Redactor` (its secret header values and API keys), as do progress events.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use crate::record::RequestRecord;

/// The suite's log; lines go to stderr and to the file.
pub(crate) struct SuiteLog {
    file: Option<Mutex<BufWriter<File>>>,
    debug: bool,
    /// `--progress-json FILE`: one JSON object per line (run start, progress, run end).
    progress: Option<Mutex<File>>,
    redactor: crate::secrets::Redactor,
    /// `--progress-every`, resolved: the interval of a run's progress lines (none: off).
    progress_every: Option<std::time::Duration>,
}

impl SuiteLog {
    /// Opens (appends to) `dir/perfplan.log`. Without a file, lines still go to stderr.
    pub fn open(dir: &Path, debug: bool, progress_json: Option<&Path>) -> SuiteLog {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("perfplan.log"))
            .ok();
        let progress = progress_json.and_then(|p| {
            let f = OpenOptions::new().create(true).append(true).open(p);
            if let Err(e) = &f {
                eprintln!(
                    "warning: cannot write progress to {}: {}",
                    p.display(),
                    crate::control::chain(e)
                );
            }
            f.ok().map(Mutex::new)
        });
        SuiteLog {
            file: file.map(|f| Mutex::new(BufWriter::new(f))),
            debug,
            progress,
            redactor: crate::secrets::Redactor::default(),
            progress_every: None,
        }
    }

    /// Hides these secrets in every line and event written from now on.
    pub(crate) fn with_redactor(mut self, redactor: crate::secrets::Redactor) -> SuiteLog {
        self.redactor = redactor;
        self
    }

    /// The secret values this log hides.
    pub(crate) fn redactor(&self) -> &crate::secrets::Redactor {
        &self.redactor
    }

    /// Writes a progress line every `every` during each run (none: no lines).
    pub(crate) fn with_progress_every(mut self, every: Option<std::time::Duration>) -> SuiteLog {
        self.progress_every = every;
        self
    }

    /// The interval of progress lines, if they are on.
    pub(crate) fn progress_every(&self) -> Option<std::time::Duration> {
        self.progress_every
    }

    /// `text` with the suite's known secrets hidden.
    pub(crate) fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.redactor.redact(text)
    }

    /// Whether `--progress-json` is on.
    pub(crate) fn wants_events(&self) -> bool {
        self.progress.is_some()
    }

    /// Appends one event line (with the wall-clock time) to the `--progress-json` file.
    pub fn event(&self, mut event: serde_json::Value) {
        let Some(file) = &self.progress else { return };
        if let Some(map) = event.as_object_mut() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            map.insert("time".into(), now.into());
        }
        if let Ok(mut f) = file.lock() {
            let _ = writeln!(f, "{}", self.redact(&event.to_string()));
        }
    }

    /// Prints a line to stderr and appends it to the log.
    pub fn say(&self, line: &str) {
        eprintln!("{}", self.redact(line));
        self.write(line);
    }

    /// Appends a line to the log only (one already printed).
    pub(crate) fn write_only(&self, line: &str) {
        self.write(line);
    }

    fn write(&self, line: &str) {
        if let Some(f) = &self.file {
            if let Ok(mut f) = f.lock() {
                let _ = writeln!(f, "{}", self.redact(line));
                let _ = f.flush();
            }
        }
    }

    /// Whether `--debug` asked for every body and response.
    pub fn debug(&self) -> bool {
        self.debug
    }

    /// With `--debug`: what one request got back.
    pub fn record(&self, run_id: &str, r: &RequestRecord) {
        if !self.debug {
            return;
        }
        let line = serde_json::json!({
            "run": run_id,
            "index": r.index,
            "item": r.item,
            "outcome": r.outcome.as_str(),
            "status": r.http_status,
            "error": r.error,
            "finish_reason": r.finish_reason,
            "usage": r.usage,
            "chunks": r.content_times.len(),
            "text": r.output_text,
        });
        self.write(&format!("debug response {line}"));
        for data in &r.raw {
            self.write(&format!(
                "debug run={run_id} index={} data: {data}",
                r.index
            ));
        }
    }
}
