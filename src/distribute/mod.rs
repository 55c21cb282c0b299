//! The distribute stage: what lets N client machines act as one. `merge` unites the
//! databases of `run --shard K/N` into one suite and recomputes its metrics from the
//! union of the rows. A shard's own share of each run and `--start-at` are settings of
//! the suite (`suite::share`, `suite::start_at`) that this stage reads back.
//! Must not know: the engine's internals (it reads stored rows, never sends load).

mod inputs;
pub mod merge;
mod merge_metrics;

pub use merge::{merge_shards, MergeError, MergeOutcome};
