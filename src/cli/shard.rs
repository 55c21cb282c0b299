//! The checks `perfplan run --shard` needs before and after the suite: what cannot be
//! split, a resumed folder of another shard, and gates (judged after `merge`).

use super::exit;
use super::run::RunArgs;
use crate::planner::RunSpec;
use crate::store::Store;

/// Whether the sharding flags can be honoured for these runs; says why not.
pub fn usable(args: &RunArgs, runs: &[RunSpec]) -> bool {
    let Some(shard) = args.shard else {
        return true;
    };
    if let Some(run) = runs.iter().find(|r| r.settings.load.search.is_some()) {
        eprintln!(
            "error: --shard cannot split the SLA search of run {}: each probe's verdict needs the \
             whole load's metrics, which exist only after `perfplan merge`; search on one machine, \
             or shard a fixed load (leave the search out with --only)",
            run.id
        );
        return false;
    }
    if let Some(dir) = &args.resume {
        let stored = Store::open(dir).and_then(|s| s.suite_shard());
        if let Ok(stored) = stored {
            if stored.as_deref() != Some(shard.to_string().as_str()) {
                eprintln!(
                    "error: --resume {}: that suite was run as shard {}, not {shard}",
                    dir.display(),
                    stored.as_deref().unwrap_or("(none)")
                );
                return false;
            }
        }
    }
    true
}

/// A shard's gates judge only its share: their failure is a note, not exit 1.
pub fn gate_code(args: &RunArgs, code: u8) -> u8 {
    if args.shard.is_some() && code == exit::GATE_FAILED {
        eprintln!(
            "note: gates judge this shard's share only; run `perfplan merge` and judge the merged suite"
        );
        return exit::OK;
    }
    code
}
