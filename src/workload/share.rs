//! This shard's requests of a run (`run --shard K/N`): the split arithmetic is
//! `distribute::shard`'s; here the shard keeps every Nth request of the prepared
//! (unsplit) run, separately for warmup, measured and priming requests, and every Nth
//! arrival of the run's one arrival sequence.

use std::time::Duration;

use crate::dataset::multi_turn::Conversations;
use crate::distribute::shard::Shard;
use crate::engine;
use crate::planner::{Load, RunSpec};
use crate::record::Phase;

use crate::workload::prepare::{PreparedRun, Requests};

/// A shard's part of one run.
#[derive(Debug, Clone)]
pub(crate) struct ShardShare {
    /// The run with the shard's load (same id and settings otherwise).
    pub run: RunSpec,
    /// The first stored request index.
    pub index_base: u64,
    /// How long after the run's start the shard's first scheduled arrival is due.
    pub lead: Duration,
}

/// The shard's run and requests: `share_run` then `select`.
pub(crate) fn take_share(
    shard: &Shard,
    run: &RunSpec,
    prepared: &mut PreparedRun,
) -> Result<ShardShare, String> {
    let shard = shard.within(&run.load.mode)?;
    let share = shard.share_run(run)?;
    let index_base = select(&shard, run, prepared)?;
    // The engine sends a schedule's first request at once: this shard's first arrival
    // is later in the run's one sequence, so its load starts that much later.
    let lead = prepared
        .requests
        .schedule()
        .and_then(|o| o.first().copied())
        .unwrap_or_default();
    Ok(ShardShare {
        run: share,
        index_base,
        lead,
    })
}

/// Keeps this shard's requests of a prepared (unsplit) run. Returns the first stored
/// request index of the shard, or `Err(note)` when nothing is left to send.
fn select(shard: &Shard, run: &RunSpec, prepared: &mut PreparedRun) -> Result<u64, String> {
    let list = match &mut prepared.requests {
        Requests::Conversations { plan, .. } => {
            let total = plan.total + super::conversation::conversation_turns(run, plan.total);
            select_conversations(shard, run, plan);
            return Ok(shard.index_base(total as u64));
        }
        Requests::List { list, .. } | Requests::Trace { list, .. } => list,
        // A sharded run's requests are always listed (`prepare::Needs::sharded`).
        Requests::AsSent(_) => return Err(no_share(shard, 0)),
    };
    let total = (list.requests.len() + list.priming.len()) as u64;
    let offsets = match list.schedule.take() {
        Some(offsets) => Some(offsets),
        None => global_arrivals(run, total),
    };
    let (mut warm, mut measured) = (0usize, 0usize);
    let mut keep = Vec::with_capacity(list.requests.len());
    for r in &list.requests {
        let counter = if r.phase == Phase::Warmup {
            &mut warm
        } else {
            &mut measured
        };
        keep.push(shard.keeps(*counter));
        *counter += 1;
    }
    let requests = std::mem::take(&mut list.requests);
    list.requests = pick(requests, &keep);
    list.schedule = offsets.map(|o| pick(o, &keep));
    let priming = std::mem::take(&mut list.priming);
    list.priming = priming
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard.keeps(*i))
        .map(|(_, r)| r)
        .collect();
    if !list.requests.iter().any(|r| r.phase == Phase::Measured) {
        return Err(no_share(shard, measured));
    }
    Ok(shard.index_base(total))
}

/// The note of a shard left no measured request of the run's `measured`.
fn no_share(shard: &Shard, measured: usize) -> String {
    format!(
        "shard {shard} has no share of this run ({measured} measured requests over {} \
         shards); skipped",
        shard.n
    )
}

fn select_conversations(
    shard: &Shard,
    run: &RunSpec,
    plan: &mut crate::workload::conversation::ConversationPlan,
) {
    match &mut plan.conversations {
        Conversations::File(scripts) => {
            let all = std::mem::take(scripts);
            *scripts = all
                .into_iter()
                .enumerate()
                .filter(|(i, _)| shard.keeps(*i))
                .map(|(_, s)| s)
                .collect();
        }
        // Generated conversations: another seed per shard, so shards never repeat one.
        Conversations::Random { seed, .. } => {
            *seed = seed.wrapping_add(u64::from(shard.k - 1).wrapping_mul(0x9e37_79b9));
        }
    }
    plan.warmup = shard.share(plan.warmup as u64) as usize;
    plan.total = shard.share(plan.total as u64) as usize;
    plan.max_active = match run.load.mode {
        Load::Closed { concurrency } => shard.share(u64::from(concurrency)).max(1) as usize,
        _ => plan.max_active,
    };
}

fn pick<T>(items: Vec<T>, keep: &[bool]) -> Vec<T> {
    items
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(x, _)| x)
        .collect()
}

/// The unsplit run's arrival times (first at zero), for open loops without a schedule.
fn global_arrivals(run: &RunSpec, n: u64) -> Option<Vec<Duration>> {
    let engine::Load::Open {
        rate,
        arrivals,
        seed,
        ..
    } = super::run_terms::engine_load(run)
    else {
        return None;
    };
    engine::schedule::clocked(rate, arrivals, seed, n as usize).ok()
}
