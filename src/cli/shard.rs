//! The checks `perfplan run --shard` needs before and after the suite: the shard itself
//! (`auto`: from the engine's environment), what cannot be split, a resumed folder of
//! another shard, and gates (judged after `merge`).

use super::exit;
use super::run::RunArgs;
use crate::planner::RunSpec;
use crate::store::Store;
use crate::suite::shard_env::{self, Engine, ShardChoice};
use crate::suite::Shard;

/// The shard `--shard` names (`auto`: read from the environment, with its engine);
/// `Err(exit code)` after saying why there is none.
pub fn resolve(args: &RunArgs) -> Result<Option<(Shard, Option<Engine>)>, u8> {
    match args.shard {
        None => Ok(None),
        Some(ShardChoice::Fixed(s)) => Ok(Some((s, None))),
        Some(ShardChoice::Auto) => match shard_env::from_env(|v| std::env::var(v).ok()) {
            Ok((s, engine)) => {
                eprintln!("perfplan: --shard auto: shard {s} (from {engine:?})");
                Ok(Some((s, Some(engine))))
            }
            Err(e) => {
                eprintln!("error: {e}");
                Err(exit::INVALID)
            }
        },
    }
}

/// Whether the sharding flags can be honoured for these runs; says why not.
pub fn usable(args: &RunArgs, shard: Option<Shard>, runs: &[RunSpec]) -> bool {
    if let Some(dir) = &args.resume {
        let dir = shard_env::resume_folder(dir, shard);
        if let Ok(stored) = Store::open(&dir).and_then(|s| s.suite_shard()) {
            let asked = shard.map(|s| s.to_string());
            if stored != asked {
                let name =
                    |s: Option<&str>| s.map_or("unsharded".to_string(), |s| format!("shard {s}"));
                eprintln!(
                    "error: --resume {}: that suite ran {}, and this command asks for {}",
                    dir.display(),
                    name(stored.as_deref()),
                    name(asked.as_deref())
                );
                return false;
            }
        }
    }
    if shard.is_none() {
        return true;
    }
    if let Some(run) = runs
        .iter()
        .find(|r| matches!(r.load(), crate::planner::Load::Search { .. }))
    {
        eprintln!(
            "error: --shard cannot split the SLA search of run {}: each probe's verdict needs the \
             whole load's metrics, which exist only after `perfplan merge`; search on one machine, \
             or shard a fixed load (leave the search out with --only)",
            run.id
        );
        return false;
    }
    true
}

/// A shard's gates judge only its share: their failure is a note, not exit 1.
pub fn gate_code(args: &RunArgs, code: u8) -> u8 {
    if args.shard.is_some() && (code == exit::GATE_FAILED || code == exit::UNLIKE_BASELINE) {
        eprintln!(
            "note: gates judge this shard's share only; run `perfplan merge` and judge the merged suite"
        );
        return exit::OK;
    }
    code
}
