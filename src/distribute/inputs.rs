//! The inputs of `perfplan merge`: the shard databases named on the command line (a
//! database, an output folder, or a suite folder holding `shard-K-of-N` folders, as every
//! shard of `run --shard … --out DIR` writes), opened and checked to be shards of one
//! suite: the same plan and imports, `--set` overrides, seed, perfplan version and shard
//! count, each shard once.

use std::path::{Path, PathBuf};

use crate::distribute::shard::env::parse_shard_folder;
use crate::distribute::shard::Shard;
use crate::distribute::MergeError;
use crate::store::{db_path, Store, SuiteRow};

/// One opened shard database.
pub(super) struct Input {
    pub(super) path: PathBuf,
    pub(super) store: Store,
    pub(super) suite: SuiteRow,
    pub(super) shard: Shard,
}

/// The databases the command line names: a path that is a folder without `results.db`
/// stands for every `shard-K-of-N` folder in it (in K order); anything else for itself.
pub(super) fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, MergeError> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() || db_path(path).exists() {
            out.push(path.clone());
            continue;
        }
        let mut shards: Vec<(Shard, PathBuf)> = std::fs::read_dir(path)
            .map_err(|_| MergeError::NoShards { path: path.clone() })?
            .filter_map(Result::ok)
            .filter_map(|e| {
                let shard = parse_shard_folder(&e.file_name().to_string_lossy())?;
                Some((shard, e.path()))
            })
            .filter(|(_, p)| db_path(p).exists())
            .collect();
        if shards.is_empty() {
            return Err(MergeError::NoShards { path: path.clone() });
        }
        shards.sort_by_key(|(s, _)| (s.n, s.k));
        out.extend(shards.into_iter().map(|(_, p)| p));
    }
    Ok(out)
}

pub(super) fn open_input(path: &Path) -> Result<Input, MergeError> {
    let db = |source| MergeError::Database {
        path: path.to_path_buf(),
        source,
    };
    let store = Store::open(path).map_err(db)?;
    let suite = store.suite().map_err(db)?;
    let text = store
        .suite_shard()
        .map_err(db)?
        .ok_or(MergeError::NotShard {
            path: path.to_path_buf(),
        })?;
    let shard = text.parse().map_err(|_| MergeError::BadShard {
        path: path.to_path_buf(),
        text,
    })?;
    Ok(Input {
        path: path.to_path_buf(),
        store,
        suite,
        shard,
    })
}

/// What must be the same in every shard of one suite: `(what, value)`.
fn identity(i: &Input) -> [(&'static str, String); 5] {
    let info = &i.suite.info;
    [
        (
            "the plan (its text and imports, by sha256)",
            i.suite.plan_sha256.clone(),
        ),
        ("the --set overrides", format!("{:?}", info.set_overrides)),
        ("the seed", info.seed.to_string()),
        ("the perfplan version", info.perfplan_version.clone()),
        ("the shard count N", i.shard.n.to_string()),
    ]
}

/// Refuses inputs that are not shards of one suite (naming what differs, with both
/// values), or a shard given twice; warns about missing shards.
pub(super) fn check_inputs(inputs: &[Input]) -> Result<Vec<String>, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    let ours = identity(first);
    for i in inputs {
        for ((what, ours), (_, theirs)) in ours.iter().zip(identity(i)) {
            if *ours != theirs {
                return Err(MergeError::OtherPlan {
                    path: i.path.clone(),
                    first: first.path.clone(),
                    what,
                    ours: short(ours),
                    theirs: short(&theirs),
                });
            }
        }
    }
    for (a, i) in inputs.iter().enumerate() {
        if let Some(j) = inputs[a + 1..].iter().find(|j| j.shard == i.shard) {
            return Err(MergeError::SameShard {
                shard: i.shard.to_string(),
                a: i.path.clone(),
                b: j.path.clone(),
            });
        }
    }
    let n = first.shard.n;
    Ok((1..=n)
        .filter(|k| !inputs.iter().any(|i| i.shard.k == *k))
        .map(|k| {
            format!("shard {k}/{n} is missing: the merged runs hold only the given shards' load")
        })
        .collect())
}

/// A hash shortened to 12 characters; other values as they are.
fn short(value: &str) -> String {
    if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        value[..12].to_string()
    } else {
        value.to_string()
    }
}
