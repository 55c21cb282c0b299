//! The distribute stage: what lets N client machines act as one. `barrier` starts every
//! run on all shards at once; `merge` unites the databases of `run --shard K/N` into one
//! suite and recomputes its metrics from the union of the rows. A shard's own share of each run and `--start-at` are settings of
//! the suite (`suite::share`, `suite::start_at`) that this stage reads back.
//! Must not know: the engine's internals (it reads stored rows, never sends load).

pub mod barrier;
mod inputs;
pub mod k8s;
pub mod merge;
mod merge_metrics;
mod merge_verdict;
mod shard_facts;

pub use merge::{merge_shards, MergeError, MergeOutcome};
