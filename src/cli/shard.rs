//! The checks `perfplan run --shard` needs before and after the suite: the shard itself
//! (`auto`: from the engine's environment), what cannot be split, a resumed folder of
//! another shard, and gates (judged after `merge`).

use std::sync::Arc;

use super::exit;
use super::failure::Failure;
use super::run::RunArgs;
use crate::distribute::barrier::{barrier_address, BarrierConfig, TcpBarrier};
use crate::distribute::shard::env::{self as shard_env, Engine, ShardChoice};
use crate::distribute::shard::Shard;
use crate::plan::LoadedPlan;
use crate::planner::RunSpec;
use crate::store::Store;

/// The shard `--shard` names (`auto`: read from the environment, with its engine).
pub fn resolve(args: &RunArgs) -> Result<Option<(Shard, Option<Engine>)>, Failure> {
    match args.shard {
        None => Ok(None),
        Some(ShardChoice::Fixed(s)) => Ok(Some((s, None))),
        Some(ShardChoice::Auto) => match shard_env::from_env(|v| std::env::var(v).ok()) {
            Ok((s, engine)) => {
                eprintln!("perfplan: --shard auto: shard {s} (from {engine:?})");
                Ok(Some((s, Some(engine))))
            }
            Err(e) => Err(Failure::new(exit::INVALID, e)),
        },
    }
}

/// Whether the sharding flags can be honoured for these runs; why not.
pub fn usable(args: &RunArgs, shard: Option<Shard>, runs: &[RunSpec]) -> Result<(), Failure> {
    if let Some(dir) = &args.resume {
        let dir = shard_env::resume_folder(dir, shard);
        if let Ok(stored) = Store::open(&dir).and_then(|s| s.suite_shard()) {
            let asked = shard.map(|s| s.to_string());
            if stored != asked {
                let name =
                    |s: Option<&str>| s.map_or("unsharded".to_string(), |s| format!("shard {s}"));
                return Err(Failure::new(
                    exit::INVALID,
                    format!(
                        "--resume {}: that suite ran {}, and this command asks for {}",
                        dir.display(),
                        name(stored.as_deref()),
                        name(asked.as_deref())
                    ),
                ));
            }
        }
    }
    if shard.is_none() {
        return Ok(());
    }
    if let Some(run) = runs
        .iter()
        .find(|r| matches!(r.load.mode, crate::planner::Load::Search(_)))
    {
        return Err(Failure::new(
            exit::INVALID,
            format!(
                "--shard cannot split the SLA search of run {}: each probe's verdict needs the \
                 whole load's metrics, which exist only after `perfplan merge`; search on one \
                 machine, or shard a fixed load (leave the search out with --only)",
                run.id
            ),
        ));
    }
    Ok(())
}

/// A shard's gates judge only its share: their failure is a note, not exit 1.
pub(crate) fn gate_code(args: &RunArgs, code: u8) -> u8 {
    if args.shard.is_some() && (code == exit::GATE_FAILED || code == exit::UNLIKE_BASELINE) {
        eprintln!(
            "note: gates judge this shard's share only; run `perfplan merge` and judge the merged suite"
        );
        return exit::OK;
    }
    code
}

/// This shard's start barrier (shard 1 listens, the others connect): at `--barrier`,
/// `$PERFPLAN_BARRIER`, or where the engine names shard 1; `None` without a shard, for
/// one shard, or for a shard given by hand with no address (said in a note).
pub fn barrier(
    args: &RunArgs,
    shard: Option<(Shard, Option<Engine>)>,
    plan: &LoadedPlan,
) -> Result<Option<Arc<TcpBarrier>>, Failure> {
    let Some((shard, engine)) = shard.filter(|(s, _)| s.n > 1) else {
        return Ok(None);
    };
    let setting = args
        .barrier
        .clone()
        .or_else(|| std::env::var("PERFPLAN_BARRIER").ok());
    let addr = match barrier_address(setting.as_deref(), engine, |v| std::env::var(v).ok()) {
        Ok(Some(addr)) => addr,
        Ok(None) => {
            if setting.is_none() {
                eprintln!(
                    "note: shard {shard} has no start barrier: only --start-at's first run starts \
                     together on every shard; give every shard --barrier HOST:PORT of shard 1 \
                     (or set PERFPLAN_BARRIER) for every run to"
                );
            }
            return Ok(None);
        }
        Err(e) => return Err(Failure::new(exit::INVALID, e)),
    };
    let cfg = BarrierConfig {
        shard,
        addr: addr.clone(),
        timeout: args.barrier_timeout.0,
        fingerprint: crate::suite::fingerprint(plan),
    };
    match TcpBarrier::start(cfg) {
        Ok(b) => {
            let role = if shard.k == 1 { "listens" } else { "connects" };
            eprintln!(
                "perfplan: start barrier at {} (shard {shard} {role}): every run starts when all \
                 {} shards are ready",
                b.addr(),
                shard.n
            );
            Ok(Some(b))
        }
        Err(e) => Err(Failure::new(exit::BARRIER, format!("start barrier: {e}"))),
    }
}

/// Tells the other shards this suite is over, and ends the barrier. With `--merge`,
/// shard 1 first waits for every shard's end: `Ok(Some(DIR))` when the shards' folders
/// in DIR are ready to merge, a failure when some shard did not end.
pub fn finish(
    args: &RunArgs,
    barrier: Option<&TcpBarrier>,
    shard: Option<Shard>,
) -> Result<Option<std::path::PathBuf>, Failure> {
    let Some(b) = barrier else {
        // One shard merges at once; without a barrier `merge_usable` refused `--merge`.
        let single = args.merge && shard.is_some_and(|s| s.n == 1);
        return Ok(args.out.clone().filter(|_| single));
    };
    let merges = args.merge && shard.is_some_and(|s| s.k == 1);
    if merges {
        eprintln!("perfplan: --merge: waiting for every shard's suite to end");
    }
    match b.finish(merges) {
        Ok(()) if merges => Ok(args.out.clone()),
        Ok(()) => Ok(None),
        Err(e) if merges => Err(Failure::new(exit::BARRIER, format!("--merge: {e}"))),
        Err(e) => {
            eprintln!("warning: start barrier: {e}");
            Ok(None)
        }
    }
}

/// `--merge` needs what tells shard 1 where the shards are and when they are done.
pub(crate) fn merge_usable(args: &RunArgs, barrier: bool) -> Result<(), Failure> {
    if !args.merge {
        return Ok(());
    }
    let why = if args.shard.is_none() {
        "--shard"
    } else if args.out.is_none() {
        "--out DIR (the folder every shard writes its shard-K-of-N folder in)"
    } else if !barrier {
        "the start barrier (so shard 1 knows when every shard is done)"
    } else {
        return Ok(());
    };
    Err(Failure::new(exit::INVALID, format!("--merge needs {why}")))
}
