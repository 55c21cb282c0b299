//! The count check after every run, outside tests too: every request the engine sent is
//! a row the writer wrote and the database holds, and the measured ones are exactly what
//! the run's stored totals (`requests_ok + requests_failed + cancelled_requests`, what
//! reports print) count.
//! A mismatch means rows are missing or doubled: the run is failed and the suite stops.

use std::path::PathBuf;

use super::SuiteError;
use crate::store::Store;

/// What the run itself counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Records the engine produced (priming, warmup and measured).
    pub records: u64,
    /// Rows the writer wrote.
    pub written: u64,
    /// Measured records, as the live summary counted them.
    pub measured: u64,
}

/// Checks `sent` against what the database holds for run `run_id`.
pub(super) fn check(store: &Store, run_id: &str, sent: Sent) -> Result<(), SuiteError> {
    let (stored, measured_rows) = store.request_counts(run_id)?;
    let total = |name| store.run_metric(run_id, name).map(|v| v.unwrap_or(0.0));
    let reported =
        (total("requests_ok")? + total("requests_failed")? + total("cancelled_requests")?) as u64;
    let agree = sent.records == sent.written
        && sent.written == stored
        && sent.measured == measured_rows
        && measured_rows == reported;
    if agree {
        return Ok(());
    }
    Err(SuiteError::RowCount(Box::new(Mismatch {
        run: run_id.to_string(),
        path: store.path().to_path_buf(),
        sent,
        stored,
        measured_rows,
        reported,
    })))
}

/// Counts that disagree, for the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    run: String,
    path: PathBuf,
    sent: Sent,
    stored: u64,
    measured_rows: u64,
    reported: u64,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run {}: {} requests were sent and {} rows written, but {} holds {} \
             ({} measured; the run counted {} measured, its totals {}): rows are missing \
             or doubled, so the run is failed; please report this as a bug",
            self.run,
            self.sent.records,
            self.sent.written,
            self.path.display(),
            self.stored,
            self.measured_rows,
            self.sent.measured,
            self.reported
        )
    }
}
