//! The distribute stage: what lets N client machines act as one. `barrier` starts every
//! run on all shards at once; `merge` unites the databases of `run --shard K/N` into one
//! suite and recomputes its metrics from the union of the rows; `shard` owns how a load
//! splits across shards and a shard's environment, `start_at` the instant a run's load
//! starts. The suite asks it how much of each run this shard sends.
//! Must not know: the engine's internals (it reads stored rows, never sends load).

pub mod barrier;
mod inputs;
pub mod k8s;
pub mod merge;
mod merge_metrics;
mod merge_verdict;
pub mod shard;
mod shard_facts;
pub mod start_at;

pub use merge::{merge_shards, MergeError, MergeOutcome};
