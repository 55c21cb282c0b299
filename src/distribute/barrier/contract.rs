//! The start barrier of a sharded suite, as the suite sees it: before each run's load
//! (after its requests are prepared, its priming pass sent and its connections opened)
//! every shard meets the others, and they all start the run's load at one announced
//! instant. A shard that will not start a run (its share is nothing, the run was done in
//! an earlier attempt, or it failed before its load) passes it, so the others do not wait
//! for it. The `distribute` stage implements the barrier and the caller hands it in
//! ([`crate::suite::RunOptions::barrier`]), so the suite names nothing of how shards meet.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use crate::record::facts::BarrierFacts;

/// A boxed future of the barrier's calls.
pub type BarrierFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, BarrierError>> + Send + 'a>>;

/// Meets the other shards of a suite at the start of each run.
pub trait StartBarrier: Send + Sync + std::fmt::Debug {
    /// Waits until every shard has arrived at run `run` (or passed it), then gives the
    /// instant this shard starts the run's load.
    fn meet<'a>(&'a self, run: &'a str) -> BarrierFuture<'a, Meeting>;
    /// This shard will not start run `run`: the others need not wait for it.
    fn pass<'a>(&'a self, run: &'a str) -> BarrierFuture<'a, ()>;
}

/// What a barrier gives a shard for one run.
#[derive(Debug, Clone)]
pub struct Meeting {
    /// When this shard starts the run's load (its warmup, then the measured requests).
    pub start: SystemTime,
    /// Stored with the run's facts as `barrier`: the round trip to the barrier, this
    /// shard's clock offset to shard 1's, how long it waited (see `distribute::barrier`).
    pub facts: BarrierFacts,
}

/// Why the shards could not meet. Every variant names the shard or address at fault.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BarrierError {
    #[error(
        "shard {missing} did not arrive at the barrier of run {run} within {waited_s:.0} s \
         (arrived: {arrived}); see that shard's log for why, or raise --barrier-timeout if \
         its runs take longer to prepare"
    )]
    Missing {
        run: String,
        missing: String,
        arrived: String,
        waited_s: f64,
    },
    #[error(
        "shard {missing} did not end its suite within {waited_s:.0} s of shard 1 (ended: \
         {ended}); merge once it has, with `perfplan merge OUT DIR`"
    )]
    NotDone {
        missing: String,
        ended: String,
        waited_s: f64,
    },
    #[error("shard {shard} left the barrier{at}: {why}")]
    Lost {
        shard: String,
        /// ` before run X`, or empty.
        at: String,
        why: String,
    },
    #[error(
        "cannot reach the barrier at {addr} (shard 1/{n} listens there) within {waited_s:.0} \
         s: {why}; is shard 1 running, and is PERFPLAN_BARRIER (or --barrier) its address?"
    )]
    Unreachable {
        addr: String,
        n: u32,
        waited_s: f64,
        why: String,
    },
    #[error("cannot listen for the other shards on {addr}: {why}; set another port with --barrier HOST:PORT")]
    Listen { addr: String, why: String },
    #[error("the barrier at {addr} refused shard {shard}: {reason}")]
    Refused {
        addr: String,
        shard: String,
        reason: String,
    },
    #[error("the barrier stopped the suite: {reason}")]
    Aborted { reason: String },
    #[error("the barrier at {addr} sent `{line}`, which is not perfplan's barrier protocol")]
    Protocol { addr: String, line: String },
    #[error("the barrier has ended (its thread stopped)")]
    Gone,
}
