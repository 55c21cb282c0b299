//! `run --shard auto`: this process's shard read from the engine that started it. A
//! Kubernetes Indexed Job gives each pod `JOB_COMPLETION_INDEX` (0 … N−1) but not N, so
//! the manifests `perfplan k8s` writes set `PERFPLAN_SHARDS`; a Slurm step gives each task
//! `SLURM_PROCID` (0 … N−1) and `SLURM_NTASKS`. Both indices are 0-based and perfplan's
//! `K/N` is 1-based: index i is shard i + 1. Owns reading those variables, and the folder
//! of a shard inside a suite's `--out` (`shard-K-of-N`); knows nothing of running.

use std::path::{Path, PathBuf};

use super::{Shard, ShardError};

/// What `--shard` says: `K/N`, or `auto` (from the engine's environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardChoice {
    Fixed(Shard),
    Auto,
}

impl std::str::FromStr for ShardChoice {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<ShardChoice, ShardError> {
        if text.trim() == "auto" {
            return Ok(ShardChoice::Auto);
        }
        text.parse().map(ShardChoice::Fixed)
    }
}

/// The engine a shard was started by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, `PERFPLAN_SHARDS`).
    Kubernetes,
    /// A Slurm job step (`SLURM_PROCID`, `SLURM_NTASKS`).
    Slurm,
}

/// Why `--shard auto` found no shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShardEnvError {
    #[error(
        "--shard auto: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job, with \
         PERFPLAN_SHARDS for the count) nor SLURM_PROCID and SLURM_NTASKS (a Slurm step: run \
         it under `srun`) is set; give the shard as --shard K/N"
    )]
    Neither,
    #[error(
        "--shard auto: {index} is set but {count} is not: it gives the number of shards \
         (the manifests of `perfplan k8s` set it)"
    )]
    NoCount {
        index: &'static str,
        count: &'static str,
    },
    #[error("--shard auto: {var} is `{value}`, not a whole number")]
    NotANumber { var: &'static str, value: String },
    #[error("--shard auto: {index_var} = {index} is not below {count_var} = {count} (indices run from 0 to {count_var} − 1)")]
    OutOfRange {
        index_var: &'static str,
        index: u32,
        count_var: &'static str,
        count: u32,
    },
}

/// The shard `--shard auto` stands for in the environment `var` reads, and its engine.
pub(crate) fn from_env(
    var: impl Fn(&str) -> Option<String>,
) -> Result<(Shard, Engine), ShardEnvError> {
    let (index_var, count_var, engine) = if var("JOB_COMPLETION_INDEX").is_some() {
        (
            "JOB_COMPLETION_INDEX",
            "PERFPLAN_SHARDS",
            Engine::Kubernetes,
        )
    } else if var("SLURM_PROCID").is_some() {
        ("SLURM_PROCID", "SLURM_NTASKS", Engine::Slurm)
    } else {
        return Err(ShardEnvError::Neither);
    };
    let number = |name: &'static str| -> Result<Option<u32>, ShardEnvError> {
        var(name)
            .map(|v| {
                v.trim().parse().map_err(|_| ShardEnvError::NotANumber {
                    var: name,
                    value: v.clone(),
                })
            })
            .transpose()
    };
    let index = number(index_var)?.ok_or(ShardEnvError::Neither)?;
    let count = number(count_var)?.ok_or(ShardEnvError::NoCount {
        index: index_var,
        count: count_var,
    })?;
    if index >= count {
        return Err(ShardEnvError::OutOfRange {
            index_var,
            index,
            count_var,
            count,
        });
    }
    Ok((
        Shard {
            k: index + 1,
            n: count,
        },
        engine,
    ))
}

/// The folder of shard `shard` in a suite folder shared by every shard: `shard-K-of-N`.
pub(crate) fn shard_folder(dir: &Path, shard: Shard) -> PathBuf {
    dir.join(format!("shard-{}-of-{}", shard.k, shard.n))
}

/// The folder `--resume DIR` continues for `shard`: its `shard-K-of-N` folder when that
/// holds a suite, else DIR itself (a suite run with `--out` before shard folders, or
/// unsharded).
pub(crate) fn resume_folder(dir: &Path, shard: Option<Shard>) -> PathBuf {
    match shard.map(|s| shard_folder(dir, s)) {
        Some(own) if crate::store::db_path(&own).exists() => own,
        _ => dir.to_path_buf(),
    }
}

/// The shard a folder name `shard-K-of-N` stands for.
pub(crate) fn parse_shard_folder(name: &str) -> Option<Shard> {
    let rest = name.strip_prefix("shard-")?;
    let (k, n) = rest.split_once("-of-")?;
    format!("{k}/{n}").parse().ok()
}

/// Tests: an environment of `pairs`, read like `std::env::var(..).ok()`.
#[cfg(test)]
pub(crate) fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: std::collections::BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_and_slurm_indices_are_0_based_shards_1_based() {
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0"), ("PERFPLAN_SHARDS", "4")]);
        assert_eq!(
            from_env(k8s),
            Ok((Shard { k: 1, n: 4 }, Engine::Kubernetes))
        );
        let slurm = env(&[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "3")]);
        assert_eq!(from_env(slurm), Ok((Shard { k: 3, n: 3 }, Engine::Slurm)));
    }

    #[test]
    fn missing_or_wrong_variables_are_named() {
        assert_eq!(from_env(env(&[])), Err(ShardEnvError::Neither));
        let no_count = from_env(env(&[("JOB_COMPLETION_INDEX", "1")])).unwrap_err();
        assert!(
            no_count.to_string().contains("PERFPLAN_SHARDS"),
            "{no_count}"
        );
        let bad = from_env(env(&[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2")])).unwrap_err();
        assert!(bad.to_string().contains("SLURM_PROCID is `x`"), "{bad}");
        let high = from_env(env(&[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "2")])).unwrap_err();
        assert!(
            high.to_string().contains("not below SLURM_NTASKS = 2"),
            "{high}"
        );
        assert!(ShardEnvError::Neither.to_string().contains("--shard K/N"));
    }

    #[test]
    fn choices_and_folders() {
        assert_eq!("auto".parse(), Ok(ShardChoice::Auto));
        assert_eq!("2/3".parse(), Ok(ShardChoice::Fixed(Shard { k: 2, n: 3 })));
        assert!("0/3".parse::<ShardChoice>().is_err());
        let dir = shard_folder(Path::new("out"), Shard { k: 2, n: 3 });
        assert_eq!(dir, Path::new("out/shard-2-of-3"));
        assert_eq!(
            parse_shard_folder("shard-2-of-3"),
            Some(Shard { k: 2, n: 3 })
        );
        for bad in ["shard-4-of-3", "shard-a-of-3", "merged", "shard-1"] {
            assert_eq!(parse_shard_folder(bad), None, "{bad}");
        }
    }
}
