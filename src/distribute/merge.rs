//! `perfplan merge`: unites the databases of `run --shard K/N` into one suite. Runs with
//! the same id (ids never depend on the shard) become one run holding every shard's
//! request rows, their times moved to one time base (the earliest shard's start of the
//! measured pass), and every metric is recomputed from those rows with the same
//! `metrics::Fold` the suite uses, so merged percentiles are exact. Rows are streamed
//! from each shard to the merged database, never held whole.
//! Refuses shards of different plans, a shard given twice, and unreadable databases.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::distribute::inputs::{check_inputs, expand, open_input, Input};
use crate::distribute::merge_metrics::{options, server_ratio, MergeFold};
use crate::distribute::merge_verdict;
use crate::distribute::shard_facts::{self, start_us};
use crate::record::facts::TimeFacts;
use crate::record::RunFacts;
use crate::store::{db_path, RequestRow, RunStatus, ServerPhase, Store, StoreError, StoredRun};

/// Why the shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("shard database {}", path.display())]
    Database {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("{} was not written by `run --shard K/N` (no shard recorded)", path.display())]
    NotShard { path: PathBuf },
    #[error("{} records shard `{text}`, which is not K/N", path.display())]
    BadShard { path: PathBuf, text: String },
    #[error("{} is not a shard of the same suite as {}: {what} differs ({theirs} there, {ours} here); merge shards of one plan, seed and perfplan version only", path.display(), first.display())]
    OtherPlan {
        path: PathBuf,
        first: PathBuf,
        what: &'static str,
        ours: String,
        theirs: String,
    },
    #[error("{} holds no results.db and no shard-K-of-N folder with one", path.display())]
    NoShards { path: PathBuf },
    #[error("shard {shard} is given twice ({} and {})", a.display(), b.display())]
    SameShard {
        shard: String,
        a: PathBuf,
        b: PathBuf,
    },
    #[error("nothing to merge: give at least one shard database")]
    Empty,
    #[error("merged database {}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("the suite's [slo]")]
    Slo(#[source] crate::metrics::slo::SloTableError),
}

/// What a merge produced.
#[derive(Debug, Clone)]
pub struct MergeOutcome {
    /// The merged database file.
    pub db: PathBuf,
    /// The shard databases merged (a folder stands for every `shard-K-of-N` in it).
    pub shards: usize,
    pub runs: usize,
    pub requests: u64,
    /// Missing shards, runs absent from a shard, and the like.
    pub warnings: Vec<String>,
}

/// Merges the shard databases `inputs` into a new database at `out` (a folder, which
/// gets `results.db`, or a `.db` file).
pub fn merge_shards(out: &Path, inputs: &[PathBuf]) -> Result<MergeOutcome, MergeError> {
    let mut inputs = expand(inputs)?
        .iter()
        .map(|p| open_input(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut warnings = check_inputs(&inputs)?;
    inputs.sort_by_key(|i| i.shard.k);
    let path = db_path(out);
    let out_err = |source| MergeError::Output {
        path: path.clone(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| {
            out_err(StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })
        })?;
    }
    let suite = &inputs[0].suite.info;
    let slo: BTreeMap<String, String> =
        serde_json::from_value(suite.slo.clone()).unwrap_or_default();
    let slos = crate::metrics::slo::slos_of(&slo).map_err(MergeError::Slo)?;
    let mut by_id: BTreeMap<String, Vec<(usize, StoredRun)>> = BTreeMap::new();
    for (i, input) in inputs.iter().enumerate() {
        let db = |source| MergeError::Database {
            path: input.path.clone(),
            source,
        };
        for run in input.store.runs().map_err(db)? {
            by_id.entry(run.id.clone()).or_default().push((i, run));
        }
    }
    for (id, parts) in &by_id {
        for input in inputs
            .iter()
            .filter(|i| !parts.iter().any(|(j, _)| inputs[*j].shard == i.shard))
        {
            warnings.push(format!(
                "run {id} is not in shard {}'s database",
                input.shard
            ));
        }
    }
    warnings.extend(unfinished(&inputs, &by_id));
    let mut store = Store::create_file(&path, suite).map_err(out_err)?;
    let mut requests = 0;
    for parts in by_id.values() {
        match merge_run(&inputs, parts, &slos, &mut store) {
            Ok(n) => requests += n,
            Err(source) => {
                // No half-merged database is left behind.
                drop(store);
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
                return Err(out_err(source));
            }
        }
    }
    Ok(MergeOutcome {
        db: path,
        shards: inputs.len(),
        runs: by_id.len(),
        requests,
        warnings,
    })
}

/// One warning per shard whose share of some runs is not finished (a shard still running,
/// or one that stopped): its rows for those runs are missing or partial.
fn unfinished(inputs: &[Input], by_id: &BTreeMap<String, Vec<(usize, StoredRun)>>) -> Vec<String> {
    let mut per_shard: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, run) in by_id.values().flatten() {
        if run.status != crate::store::RunStatus::Done {
            let entry = per_shard.entry(*i).or_default();
            entry.push(format!("#{} {}", run.ordinal, run.status.as_str()));
        }
    }
    per_shard
        .into_iter()
        .map(|(i, runs)| {
            format!(
                "shard {} has runs that did not finish ({}): its share of them is missing or \
                 partial; is it still running? merge again when it is done",
                inputs[i].shard,
                runs.join(", ")
            )
        })
        .collect()
}

/// The merged status: failed if a shard failed, else the least finished one.
fn merged_status(parts: &[(usize, StoredRun)]) -> RunStatus {
    let all = |s| parts.iter().all(|(_, r)| r.status == s);
    let any = |s| parts.iter().any(|(_, r)| r.status == s);
    if any(RunStatus::Failed) {
        RunStatus::Failed
    } else if all(RunStatus::Done) {
        RunStatus::Done
    } else if any(RunStatus::Interrupted) || any(RunStatus::Running) {
        RunStatus::Interrupted
    } else {
        RunStatus::Pending
    }
}

/// Rows copied per transaction while merging.
const MERGE_BATCH: usize = 4096;

/// Merges one run's parts (one per shard holding it); returns its request count. The
/// shards' rows are streamed: each is moved to the merged time base, folded into the
/// merged metrics and copied in batches, so no run is held whole.
fn merge_run(
    inputs: &[Input],
    parts: &[(usize, StoredRun)],
    slos: &[crate::metrics::Slo],
    out: &mut Store,
) -> Result<u64, StoreError> {
    let base = parts.iter().filter_map(|(_, r)| start_us(r)).min();
    let mut scrapes = Vec::new();
    for (i, run) in parts {
        let store = &inputs[*i].store;
        scrapes.push((
            store.server_metrics(&run.id, ServerPhase::Before)?,
            store.server_metrics(&run.id, ServerPhase::After)?,
        ));
    }
    let (before, after) = merged_counters(&scrapes, own_server_per_shard(&parts[0].1.settings));
    let first = &parts[0].1;
    let opts = options(first, parts, slos, server_ratio(first, &before, &after));
    let mut fold = MergeFold::new(inputs, parts, &opts);
    out.begin_merged_run(first)?;
    for (i, run) in parts {
        let delta = start_us(run).zip(base).map_or(0, |(s, b)| s - b);
        copy_rows(
            &inputs[*i].store,
            &run.id,
            Duration::from_micros(delta),
            (&mut fold, out),
        )?;
    }
    let rows = fold.rows;
    let named: Vec<(String, &StoredRun)> = parts
        .iter()
        .map(|(i, r)| (inputs[*i].shard.to_string(), r))
        .collect();
    let (verdict, shards) = shard_facts::of_shards(&named, &fold.first_of, base.unwrap_or(0));
    let steps = fold.take_steps();
    let (mut summary, input_lengths, class_requests) = fold.finish(parts, &opts);
    summary.client_bound = verdict;
    let mut facts = RunFacts {
        measured_start_unix_us: base,
        input_lengths: Some(input_lengths),
        mix: super::merge_metrics::merged_mix(parts, &class_requests),
        time: steps.map(|steps| TimeFacts {
            steps: Some(steps),
            ..TimeFacts::default()
        }),
        ..summary.facts(rows)
    };
    shards.fill(&mut facts);
    let trust = &inputs[0].suite.info.trust;
    let (warnings, judged) = merge_verdict::merged(&named, &summary, trust, &mut facts);
    let errors: Vec<String> = named
        .iter()
        .filter_map(|(s, r)| r.error.as_ref().map(|e| format!("shard {s}: {e}")))
        .collect();
    let merged = StoredRun {
        status: merged_status(parts),
        started_unix_ms: parts.iter().filter_map(|(_, r)| r.started_unix_ms).min(),
        finished_unix_ms: parts.iter().filter_map(|(_, r)| r.finished_unix_ms).max(),
        warnings,
        facts,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        metrics: summary.values,
        verdict: judged
            .filter(|_| merged_status(parts) == RunStatus::Done)
            .unwrap_or_default(),
        ..first.clone()
    };
    out.finish_merged_run(&merged)?;
    if !before.is_empty() {
        out.write_server_metrics(&merged.id, ServerPhase::Before, &before)?;
    }
    if !after.is_empty() {
        out.write_server_metrics(&merged.id, ServerPhase::After, &after)?;
    }
    Ok(rows)
}

/// Copies one shard's rows of run `run_id`, each moved by `delta` to the merged time
/// base and folded, in batches of `MERGE_BATCH`.
fn copy_rows(
    from: &Store,
    run_id: &str,
    delta: Duration,
    (fold, out): (&mut MergeFold, &mut Store),
) -> Result<(), StoreError> {
    let mut batch: Vec<RequestRow> = Vec::with_capacity(MERGE_BATCH);
    let mut failed: Option<StoreError> = None;
    from.each_request_row(run_id, |mut row| {
        if failed.is_some() {
            return;
        }
        row.record.map_times(|t| t + delta);
        fold.add(&row);
        batch.push(row);
        if batch.len() >= MERGE_BATCH {
            failed = out.insert_merged_rows(run_id, &batch).err();
            batch.clear();
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    out.insert_merged_rows(run_id, &batch)
}

/// Whether every shard ran against a server of its own: a `sim://` endpoint or one the
/// plan launches is started by each perfplan process.
fn own_server_per_shard(settings: &Value) -> bool {
    let spec = settings.pointer("/endpoint/spec");
    let base_url = spec
        .and_then(|s| s.get("base_url"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let launched = spec
        .and_then(|s| s.get("launch"))
        .is_some_and(|l| !l.is_null());
    base_url.starts_with("sim://") || launched
}

type Counters = BTreeMap<String, f64>;

/// The merged run's `before` and `after` counters, kept only for names every shard
/// scraped both times. One shared server: the earliest `before` and the latest `after`
/// bracket every shard's requests. A server per shard: the sums, so `after − before` is
/// the sum of the shards' own differences.
fn merged_counters(scrapes: &[(Counters, Counters)], own_servers: bool) -> (Counters, Counters) {
    let (mut before, mut after) = (Counters::new(), Counters::new());
    let Some((first, _)) = scrapes.first() else {
        return (before, after);
    };
    for name in first.keys() {
        let pairs: Option<Vec<(f64, f64)>> = scrapes
            .iter()
            .map(|(b, a)| Some((*b.get(name)?, *a.get(name)?)))
            .collect();
        let Some(pairs) = pairs else { continue };
        let (b, a) = if own_servers {
            pairs
                .iter()
                .fold((0.0, 0.0), |(b, a), p| (b + p.0, a + p.1))
        } else {
            pairs
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(b, a), p| {
                    (b.min(p.0), a.max(p.1))
                })
        };
        before.insert(name.clone(), b);
        after.insert(name.clone(), a);
    }
    (before, after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(status: RunStatus) -> StoredRun {
        StoredRun {
            id: "r".into(),
            ordinal: 1,
            axes: json!({}),
            settings: json!({}),
            status,
            started_unix_ms: None,
            finished_unix_ms: None,
            warnings: Vec::new(),
            facts: RunFacts::default(),
            error: None,
            metrics: BTreeMap::new(),
            verdict: Default::default(),
        }
    }

    #[test]
    fn status_is_failed_if_any_failed_else_the_least_finished() {
        let parts = |s: &[RunStatus]| -> Vec<(usize, StoredRun)> {
            s.iter().enumerate().map(|(i, s)| (i, run(*s))).collect()
        };
        use RunStatus::*;
        assert_eq!(merged_status(&parts(&[Done, Done])), Done);
        assert_eq!(merged_status(&parts(&[Done, Failed])), Failed);
        assert_eq!(merged_status(&parts(&[Interrupted, Done])), Interrupted);
        assert_eq!(merged_status(&parts(&[Pending, Done])), Pending);
    }

    #[test]
    fn counters_of_one_shared_server_bracket_and_of_own_servers_add_up() {
        let c = |pairs: &[(&str, f64)]| -> Counters {
            pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
        };
        let scrapes = vec![
            (
                c(&[("h", 10.0), ("q", 100.0)]),
                c(&[("h", 30.0), ("q", 200.0)]),
            ),
            (
                c(&[("h", 12.0), ("q", 110.0), ("x", 1.0)]),
                c(&[("h", 40.0), ("q", 260.0)]),
            ),
        ];
        let (b, a) = merged_counters(&scrapes, false);
        assert_eq!((b["h"], a["h"], b["q"], a["q"]), (10.0, 40.0, 100.0, 260.0));
        let (b, a) = merged_counters(&scrapes, true);
        // Deltas 20 + 28 hits over 100 + 150 queries.
        assert_eq!(a["h"] - b["h"], 48.0);
        assert_eq!(a["q"] - b["q"], 250.0);
        assert!(!b.contains_key("x"), "a name one shard lacks is left out");
        assert_eq!(
            merged_counters(&[], true),
            (Counters::new(), Counters::new())
        );
    }

    #[test]
    fn sim_and_launched_endpoints_are_a_server_per_shard() {
        let run = |spec: Value| json!({"endpoint": {"spec": spec}});
        assert!(own_server_per_shard(&run(json!({"base_url": "sim://a"}))));
        assert!(own_server_per_shard(&run(
            json!({"base_url": "http://127.0.0.1:{port}", "launch": "perfplan sim --port {port}"})
        )));
        assert!(!own_server_per_shard(&run(
            json!({"base_url": "http://10.0.0.1:8000"})
        )));
    }
}
