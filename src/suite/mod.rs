//! The suite stage: the run loop of a suite. Executes a plan's runs in order on the
//! engine, stores every request as it completes, summarizes each run: the driver, one
//! run's passes (`execute`), the writer, the row counts and the priming pass. It ties
//! the stages together and calls each for its job: `workload` makes a run's requests,
//! `measure` folds and judges what they measured, `probe` tests an endpoint before its
//! first run, `live` says what is happening, `distribute` says this shard's share and
//! start instant, `telemetry` watches the server, `servers` launches it, and SLA searches
//! are `search`'s (handed in as a [`SearchDriver`], so the suite names nothing of it).
//! Must not know: HTTP details (requests go through the engine, control calls through
//! `control`), the search state machines, merging.

mod counts;
pub(crate) mod driver;
pub(crate) mod execute;
mod pass_warnings;
mod priming;
pub use crate::live::parse_progress_every;
mod writer;

pub use counts::Mismatch;
pub use driver::{
    fingerprint, response_limits, resume_command, run_suite, run_suite_sharded, RunOptions,
    SearchDriver, SuiteOutcome,
};

use std::path::PathBuf;

use crate::probe::ProbeError;

impl crate::workload::RequestLog for crate::live::log::SuiteLog {
    fn debug(&self) -> bool {
        crate::live::log::SuiteLog::debug(self)
    }

    /// With `--debug`: a run's request bodies, before they are sent.
    fn requests(&self, run_id: &str, requests: &[crate::engine::PreparedRequest]) {
        if !self.debug() {
            return;
        }
        for r in requests {
            let body = String::from_utf8_lossy(&r.body);
            self.write_only(&format!(
                "debug run={run_id} item={} phase={} POST {} {body}",
                r.item,
                r.phase.as_str(),
                r.path
            ));
        }
    }
}

impl From<crate::telemetry::TelemetryError> for SuiteError {
    fn from(e: crate::telemetry::TelemetryError) -> SuiteError {
        match e {
            crate::telemetry::TelemetryError::Poisoned => SuiteError::Poisoned,
            crate::telemetry::TelemetryError::Store(s) => SuiteError::Store(s),
        }
    }
}

impl From<crate::distribute::start_at::StartError> for SuiteError {
    fn from(e: crate::distribute::start_at::StartError) -> SuiteError {
        SuiteError::Barrier {
            run: e.run,
            source: e.source,
        }
    }
}

impl From<crate::metrics::slo::SloTableError> for SuiteError {
    fn from(e: crate::metrics::slo::SloTableError) -> SuiteError {
        SuiteError::Slo {
            text: e.text,
            reason: e.reason,
        }
    }
}

impl From<crate::servers::sims::SimsError> for SuiteError {
    fn from(e: crate::servers::sims::SimsError) -> SuiteError {
        match e {
            crate::servers::sims::SimsError::Runtime(s) => SuiteError::Runtime(s),
            crate::servers::sims::SimsError::Sim { endpoint, source } => {
                SuiteError::Sim { endpoint, source }
            }
        }
    }
}

/// Why a run or the suite could not go on. Failed requests are never errors: they are
/// records with an outcome.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    #[error("results database")]
    Store(#[from] crate::store::StoreError),
    #[error("cannot store the requests of run {run} in {}: {}; the run was stopped with {stored} of its requests stored; once fixed, `perfplan run PLAN --resume {}` runs it again", path.display(), advice(source), folder(path))]
    Rows {
        run: String,
        path: PathBuf,
        stored: u64,
        #[source]
        source: Box<crate::store::StoreError>,
    },
    #[error("cannot write the results database {}: {}; the suite stopped; once fixed, continue it with `perfplan run PLAN --resume {}`", path.display(), advice(source), folder(path))]
    StoreWrite {
        path: PathBuf,
        #[source]
        source: Box<crate::store::StoreError>,
    },
    #[error("the database writer of run {run} crashed: its rows are incomplete")]
    WriterCrashed { run: String },
    #[error("the results database could not keep up with run {run}: {queue} records waited to be written (it sustained {sustained:.0} rows/s; the run needed {needed:.0}/s), so the run was stopped; its rows are all stored, but the run is incomplete. Put the output folder on a faster disk (not a network file system), or lower the run's rate")]
    WriterBehind {
        run: String,
        queue: usize,
        sustained: f64,
        needed: f64,
    },
    #[error("{0}")]
    RowCount(Box<counts::Mismatch>),
    #[error("the results database lock was poisoned by a crashed writer")]
    Poisoned,
    #[error("run {run} is an SLA search, and this caller of the suite runs no searches (set `RunOptions::search` to `search::DRIVER`)")]
    NoSearchDriver { run: String },
    #[error("cannot start the simulator for endpoint `{endpoint}`")]
    Sim {
        endpoint: String,
        #[source]
        source: crate::sim::SimError,
    },
    #[error("endpoint `{endpoint}`")]
    Endpoint {
        endpoint: String,
        #[source]
        source: crate::engine::EngineError,
    },
    #[error("endpoint `{endpoint}`")]
    Control {
        endpoint: String,
        #[source]
        source: crate::control::ControlError,
    },
    #[error(transparent)]
    Probe(#[from] crate::probe::ProbeError),
    #[error("invalid load of run {run}")]
    Load {
        run: String,
        #[source]
        source: crate::engine::RunError,
    },
    #[error(transparent)]
    Template(#[from] crate::request::TemplateError),
    #[error("invalid SLO `{text}`: {reason}")]
    Slo { text: String, reason: String },
    #[error("cannot create the output folder {}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("server of endpoint `{endpoint}`")]
    Server {
        endpoint: String,
        #[source]
        source: crate::servers::LifecycleError,
    },
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("run {run}: the start barrier")]
    Barrier {
        run: String,
        #[source]
        source: crate::distribute::barrier::BarrierError,
    },
}

/// What to do about a failed write to the database.
fn advice(e: &crate::store::StoreError) -> &'static str {
    e.write_failure().map_or(
        "the write failed (the cause follows)",
        crate::store::WriteFailure::advice,
    )
}

/// The output folder of a database file, for `--resume`.
fn folder(path: &std::path::Path) -> String {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .display()
        .to_string()
}

impl SuiteError {
    /// The error as seen from a suite writing the database at `path`: a failed write
    /// (disk full, locked, read-only, I/O) names the file and what to do.
    pub(crate) fn at_database(self, path: &std::path::Path) -> SuiteError {
        match self {
            SuiteError::Store(source) if source.write_failure().is_some() => {
                SuiteError::StoreWrite {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                }
            }
            other => other,
        }
    }

    /// Whether the whole suite must stop (as opposed to failing one run).
    pub(crate) fn stops_suite(&self) -> bool {
        matches!(
            self,
            SuiteError::Store(_)
                | SuiteError::Rows { .. }
                | SuiteError::StoreWrite { .. }
                | SuiteError::WriterCrashed { .. }
                | SuiteError::WriterBehind { .. }
                | SuiteError::RowCount(_)
                | SuiteError::Poisoned
                | SuiteError::Probe(
                    ProbeError::Connection { .. } | ProbeError::ModelNotServed { .. }
                )
                | SuiteError::Output { .. }
                | SuiteError::Runtime(_)
                | SuiteError::Sim { .. }
                | SuiteError::Barrier { .. }
        )
    }
}
