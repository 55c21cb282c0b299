//! Exit codes, listed in the book (`docs/src/guide/exit-codes.md`). Every command returns
//! one of these, and the errors of the layers below map to them here (they know nothing
//! of exit codes).

use crate::distribute::MergeError;
use crate::probe::ProbeError;
use crate::store::StoreError;
use crate::suite::SuiteError;
use crate::workload::WorkloadError;

/// Everything went as asked.
pub const OK: u8 = 0;
/// A gate failed (the benchmark ran; the release does not pass).
pub const GATE_FAILED: u8 = 1;
/// The plan or the command line is invalid.
pub(crate) const INVALID: u8 = 2;
/// An endpoint could not be used (unreachable, its TLS certificate refused, or it refused
/// the connection test).
pub(crate) const ENDPOINT: u8 = 3;
/// At least one run failed (its error is stored and printed); the others completed.
pub(crate) const RUN_FAILED: u8 = 4;
/// A results database is missing, unreadable or from a newer perfplan.
pub const DATABASE: u8 = 5;
/// An output file (report, export) could not be written.
pub(crate) const OUTPUT: u8 = 6;
/// The results database could not be written during a run (disk full, locked by another
/// process, read-only, I/O error): the suite stopped with the file named; `--resume DIR`
/// continues once it is fixed.
pub const STORE_WRITE: u8 = 7;
/// The requests sent, the rows stored and the run's totals disagree: rows are missing.
pub const ROW_COUNT: u8 = 8;
/// A relative gate compared a run with a baseline run whose settings differ beyond the
/// axes (an output length, a dataset, a seed…) that `--allow-changed` does not name.
pub(crate) const UNLIKE_BASELINE: u8 = 9;

/// The exit code of a suite's gate verdicts.
pub(crate) fn of_gates(verdict: crate::report::gates::GateVerdict) -> u8 {
    use crate::report::gates::GateVerdict;
    match verdict {
        GateVerdict::Passed => OK,
        GateVerdict::Failed => GATE_FAILED,
        GateVerdict::UnlikeBaseline => UNLIKE_BASELINE,
        GateVerdict::InvalidRun => INVALID_RUN,
    }
}
/// A gate was on a run whose verdict is `invalid` (or `suspect` under `[trust] strict`):
/// the numbers cannot be signed off whatever their value (the verdict's reasons say why
/// and what to do; `--accept REASON` accepts a known one).
pub const INVALID_RUN: u8 = 12;
/// `import evalscope --from-script`: the script could not be run, failed, or called no
/// `evalscope perf`.
pub(crate) const IMPORT: u8 = 10;
/// The shards of a sharded suite could not start a run together: a shard did not arrive
/// at the start barrier in time (named), left it, or could not reach it; or shard 1
/// could not listen for the others.
pub(crate) const BARRIER: u8 = 11;
/// `compare` matched no run of the new suite with one of the base suite (by axis values,
/// nor by the load's shape): there is nothing to compare.
pub const NOTHING_MATCHED: u8 = 13;
/// perfplan itself failed (a bug).
pub(crate) const INTERNAL: u8 = 70;
/// Interrupted (Ctrl-C): finished runs are stored; `--resume DIR` continues.
pub(crate) const INTERRUPTED: u8 = 130;
/// Standard output was closed by its reader (`perfplan report DB --format json | head`):
/// the rest is not printed, no message; 141 as for a process ended by SIGPIPE, the
/// shell's convention (perfplan keeps SIGPIPE ignored, so a server closing a socket never
/// ends a run).
pub(crate) const CLOSED_OUTPUT: u8 = 141;

/// The exit code for an error that stopped a suite.
pub(crate) fn of_suite_error(e: &SuiteError) -> u8 {
    match e {
        SuiteError::Probe(ProbeError::Connection { .. } | ProbeError::ModelNotServed { .. })
        | SuiteError::Sim { .. } => ENDPOINT,
        SuiteError::Rows { .. }
        | SuiteError::StoreWrite { .. }
        | SuiteError::WriterBehind { .. } => STORE_WRITE,
        SuiteError::Store(e) if e.write_failure().is_some() => STORE_WRITE,
        SuiteError::Store(_) => DATABASE,
        SuiteError::RowCount(_) => ROW_COUNT,
        SuiteError::Barrier { .. } => BARRIER,
        SuiteError::Slo { .. }
        | SuiteError::Control { .. }
        | SuiteError::Probe(ProbeError::Control { .. })
        | SuiteError::Endpoint { .. }
        | SuiteError::Template(_)
        | SuiteError::Workload(
            WorkloadError::Tokenizer { .. }
            | WorkloadError::Dataset { .. }
            | WorkloadError::Template(_),
        ) => INVALID,
        _ => INTERNAL,
    }
}

/// The exit code of a refused or failed merge.
pub(crate) fn of_merge_error(e: &MergeError) -> u8 {
    match e {
        MergeError::Database { .. } => DATABASE,
        MergeError::Output {
            source: StoreError::AlreadyExists { .. } | StoreError::CreateDir { .. },
            ..
        } => OUTPUT,
        MergeError::Output { source, .. } if source.write_failure().is_some() => STORE_WRITE,
        MergeError::Output { .. } => DATABASE,
        _ => INVALID,
    }
}
