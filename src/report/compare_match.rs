//! How `compare` pairs runs of two suites: by their axis values (ignored axes left out),
//! repeats as groups, and, for runs left over on both sides, by their load's shape (the
//! load without its request counts).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::repeats::{group_leads, REPEAT_AXIS};
use crate::store::StoredRun;

/// The load keys that say how many requests a tier sends, not what load it is.
const COUNT_KEYS: [&str; 2] = ["requests", "warmup"];

/// A run's axes with its load reduced to its shape: the load without its counts.
fn shape_key(run: &StoredRun, ignore: &[String]) -> String {
    let mut shaped = run.clone();
    if let Some(Value::Object(load)) = shaped.axes.get_mut("load") {
        for k in COUNT_KEYS {
            load.remove(k);
        }
    }
    match_key(&shaped, ignore)
}

/// Pairs among the runs left unmatched on both sides whose loads have the same shape,
/// one to one (a shape that two runs of one side share matches nothing); the pairs are
/// taken out of `only_base` and `only_new`.
pub(crate) fn match_by_shape(
    (base, new): (&[StoredRun], &[StoredRun]),
    only_base: &mut Vec<usize>,
    only_new: &mut Vec<usize>,
    ignore: &[String],
) -> Vec<(usize, usize)> {
    let unique = |runs: &[StoredRun], idx: &[usize]| -> HashMap<String, usize> {
        let mut seen: HashMap<String, Option<usize>> = HashMap::new();
        for &i in idx {
            seen.entry(shape_key(&runs[i], ignore))
                .and_modify(|v| *v = None)
                .or_insert(Some(i));
        }
        seen.into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect()
    };
    let b = unique(base, only_base);
    let n = unique(new, only_new);
    // Runs whose axes are the same are duplicates of a matched key, not another length
    // of a tier: they stay unmatched.
    let mut pairs: Vec<(usize, usize)> = b
        .iter()
        .filter_map(|(k, &i)| n.get(k).map(|&j| (i, j)))
        .filter(|&(i, j)| match_key(&base[i], ignore) != match_key(&new[j], ignore))
        .collect();
    pairs.sort_unstable();
    only_base.retain(|i| !pairs.iter().any(|(b, _)| b == i));
    only_new.retain(|j| !pairs.iter().any(|(_, n)| n == j));
    pairs
}

/// An axis value in a form that does not depend on key order.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, String> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            let parts: Vec<String> = sorted.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// The matching key of a run: its axes minus the ignored ones, order-independent.
pub(crate) fn match_key(run: &StoredRun, ignore: &[String]) -> String {
    let mut parts: BTreeMap<String, String> = BTreeMap::new();
    if let Value::Object(map) = &run.axes {
        for (k, v) in map.iter().filter(|(k, _)| !ignore.contains(k)) {
            parts.insert(k.clone(), canonical(v));
        }
    }
    parts
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// Pairs of `(base index, new index)` with equal keys, then the unmatched of each side.
/// When a key repeats on one side, its first run is matched and the others are unmatched.
pub(crate) fn match_runs(
    base: &[StoredRun],
    new: &[StoredRun],
    ignore: &[String],
) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let mut only_base = Vec::new();
    let mut first: HashMap<String, usize> = HashMap::new();
    for (i, run) in base.iter().enumerate() {
        let key = match_key(run, ignore);
        match first.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => only_base.push(i),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(i);
            }
        }
    }
    let mut pairs = Vec::new();
    let mut only_new = Vec::new();
    for (j, run) in new.iter().enumerate() {
        match first.remove(&match_key(run, ignore)) {
            Some(i) => pairs.push((i, j)),
            None => only_new.push(j),
        }
    }
    only_base.extend(first.into_values());
    only_base.sort_unstable();
    (pairs, only_base, only_new)
}

/// Runs matched as groups: the one rule of `compare` and of relative gates. Each side's
/// groups of repeats stand by their first stored run (a run not repeated by itself), and
/// are matched by axis values with `repeat` and `ignore` left out, so repeat k is never
/// held against repeat k: group means are.
#[derive(Debug, Clone)]
pub(crate) struct GroupMatch {
    pub base_leads: Vec<StoredRun>,
    pub new_leads: Vec<StoredRun>,
    /// `(base lead, new lead)` indices.
    pub pairs: Vec<(usize, usize)>,
    pub only_base: Vec<usize>,
    pub only_new: Vec<usize>,
    /// `ignore` with `repeat` added: the axes the pairs were matched without.
    pub ignore: Vec<String>,
}

/// The groups of `base` and `new` matched (see `GroupMatch`).
pub(crate) fn match_groups(base: &[StoredRun], new: &[StoredRun], ignore: &[String]) -> GroupMatch {
    let mut ignore = ignore.to_vec();
    ignore.push(REPEAT_AXIS.to_string());
    let (base_leads, new_leads) = (group_leads(base), group_leads(new));
    let (pairs, only_base, only_new) = match_runs(&base_leads, &new_leads, &ignore);
    GroupMatch {
        base_leads,
        new_leads,
        pairs,
        only_base,
        only_new,
        ignore,
    }
}
