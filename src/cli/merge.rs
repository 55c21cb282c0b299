//! `perfplan merge OUT SHARD...`: unites the databases of `run --shard K/N` into one suite,
//! recomputes every metric from the raw request rows, then reports like `perfplan run`.

use std::path::PathBuf;

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use crate::distribute::merge_shards;
use crate::store::DB_FILE;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The merged suite: an output folder (it gets `results.db`, `report.md` and
    /// `report.html`) or a `.db` file; its database must not exist yet. Exit 1 when a
    /// gate of the plan fails on the merged suite.
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    /// Every shard's results: output folders or their `results.db` (from `run --shard K/N`),
    /// or the one `--out DIR` the shards shared (every `shard-K-of-N` folder in it).
    #[arg(value_name = "SHARD_DB", required = true)]
    pub shards: Vec<PathBuf>,
}

pub fn run(args: &MergeArgs) -> Ended {
    merge_and_report(&args.out, &args.shards)
}

/// Merges `shards` into `out`, says what it merged (and each run's shards), and reports
/// the merged suite like `perfplan run`, judging the plan's gates.
pub(crate) fn merge_and_report(out: &std::path::Path, shards: &[PathBuf]) -> Ended {
    let outcome =
        merge_shards(out, shards).map_err(|e| Failure::of(exit::of_merge_error(&e), &e))?;
    for w in &outcome.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "perfplan: merged {} shard databases: {} runs, {} requests, into {}",
        outcome.shards,
        outcome.runs,
        outcome.requests,
        outcome.db.display()
    );
    if let Ok(runs) = crate::store::Store::open(&outcome.db).and_then(|s| s.runs()) {
        for run in &runs {
            for line in crate::report::health::shard_lines(run) {
                eprintln!("  #{} {}: {line}", run.ordinal, run.id);
            }
        }
    }
    match outcome.db.parent() {
        Some(dir) if outcome.db.file_name().is_some_and(|n| n == DB_FILE) => {
            super::report::after_run(dir, &[], None, &[])
        }
        _ => {
            eprintln!("see `perfplan report {}`", outcome.db.display());
            Ok(exit::OK)
        }
    }
}
