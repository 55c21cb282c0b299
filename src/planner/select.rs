//! `--only key=value[,key=value…]` (repeatable): the runs to keep. A key given several
//! times matches any of its values; different keys must all match. Keys are axes, `id`
//! (a prefix), `ordinal`, or `concurrency`/`rate`/`requests` of the load. A key no run
//! has, a value no run has, and filters no run meets together are errors that list what
//! the runs have, so a typo never selects nothing in silence.

use serde_json::Value;

use super::{display_value, RunSpec};
use crate::plan::diag::suggest;

/// Keys that are not axes.
const LOAD_KEYS: [&str; 3] = ["concurrency", "rate", "requests"];

/// The parts every run names, whether or not the matrix makes them an axis (a plan with
/// one endpoint still answers `--only endpoint=NAME`).
const NAMED_KEYS: [&str; 3] = ["endpoint", "model", "dataset"];

/// Most values (or combinations) an error lists.
const LISTED: usize = 12;

/// Keeps the runs matching the filters of `only`.
pub fn select(runs: Vec<RunSpec>, only: &[String]) -> Result<Vec<RunSpec>, String> {
    let filters = parse(only)?;
    if filters.is_empty() {
        return Ok(runs);
    }
    let mut problems = Vec::new();
    for (key, wanted) in &filters {
        match values(&runs, key) {
            None => problems.push(unknown_key(&runs, key)),
            Some(have) => problems.extend(
                wanted
                    .iter()
                    .filter(|w| !runs.iter().any(|r| matches(r, key, w)))
                    .map(|w| unknown_value(key, w, &have)),
            ),
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("\nerror: "));
    }
    let kept: Vec<RunSpec> = runs
        .iter()
        .filter(|r| {
            filters
                .iter()
                .all(|(k, vs)| vs.iter().any(|v| matches(r, k, v)))
        })
        .cloned()
        .collect();
    if kept.is_empty() {
        return Err(no_combination(&runs, &filters));
    }
    Ok(kept)
}

/// `key=value` pairs grouped by key, in the order keys first appear.
fn parse(only: &[String]) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut filters: Vec<(String, Vec<String>)> = Vec::new();
    for arg in only {
        for part in arg.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| {
                format!("`--only {part}`: write key=value, e.g. --only endpoint=cache-on,cache_state=warm")
            })?;
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            match filters.iter_mut().find(|(key, _)| *key == k) {
                Some((_, vs)) if !vs.contains(&v) => vs.push(v),
                Some(_) => {}
                None => filters.push((k, vec![v])),
            }
        }
    }
    Ok(filters)
}

/// The value of `key` in `run` as `--only` matches it, if the run has one.
fn value_of(run: &RunSpec, key: &str) -> Option<String> {
    match key {
        "id" => Some(run.id.clone()),
        "ordinal" => Some(run.ordinal.to_string()),
        k if LOAD_KEYS.contains(&k) && !run.axes.contains_key(k) => {
            let load = serde_json::to_value(&run.settings.load).unwrap_or(Value::Null);
            load.get(k).map(display_value)
        }
        "endpoint" if !run.axes.contains_key("endpoint") => {
            Some(run.settings.endpoint.name.clone())
        }
        "model" if !run.axes.contains_key("model") => Some(run.settings.model.name.clone()),
        "dataset" if !run.axes.contains_key("dataset") => Some(run.settings.dataset.name.clone()),
        k => run.axes.get(k).map(display_value),
    }
}

fn matches(run: &RunSpec, key: &str, want: &str) -> bool {
    match key {
        "id" => run.id.starts_with(want),
        _ => value_of(run, key).is_some_and(|v| v == want),
    }
}

/// The distinct values the runs have for `key` (`None`: no run has the key).
fn values(runs: &[RunSpec], key: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for v in runs.iter().filter_map(|r| value_of(r, key)) {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    let always =
        matches!(key, "id" | "ordinal") || LOAD_KEYS.contains(&key) || NAMED_KEYS.contains(&key);
    (always || !out.is_empty()).then_some(out)
}

fn listed(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > LISTED {
        text.push_str(&format!(", … ({} in all)", items.len()));
    }
    if items.is_empty() {
        text.push_str("none");
    }
    text
}

fn unknown_key(runs: &[RunSpec], key: &str) -> String {
    let mut keys: Vec<String> = Vec::new();
    for k in runs.iter().flat_map(|r| r.axes.keys()) {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    for k in NAMED_KEYS {
        if !keys.iter().any(|have| have == k) {
            keys.push(k.to_string());
        }
    }
    keys.extend(["id", "ordinal"].iter().map(|s| s.to_string()));
    keys.extend(LOAD_KEYS.iter().map(|s| s.to_string()));
    let hint = suggest(key, keys.iter().map(String::as_str))
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    format!(
        "`--only {key}=…`: no run has an axis `{key}`{hint}; the keys are: {}",
        keys.join(", ")
    )
}

fn unknown_value(key: &str, want: &str, have: &[String]) -> String {
    let hint = suggest(want, have.iter().map(String::as_str))
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    format!(
        "`--only {key}={want}`: no run has {key} `{want}`{hint}; {key} takes: {}",
        listed(have)
    )
}

fn no_combination(runs: &[RunSpec], filters: &[(String, Vec<String>)]) -> String {
    let asked: Vec<String> = filters
        .iter()
        .map(|(k, vs)| format!("{k}={}", vs.join("|")))
        .collect();
    let mut combos: Vec<String> = Vec::new();
    for run in runs {
        let combo = filters
            .iter()
            .map(|(k, _)| format!("{k}={}", value_of(run, k).unwrap_or_else(|| "—".into())))
            .collect::<Vec<_>>()
            .join(" ");
        if !combos.contains(&combo) {
            combos.push(combo);
        }
    }
    format!(
        "`--only`: no run has {} together; the runs have: {}",
        asked.join(" and "),
        listed(&combos)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_group_by_key_in_the_order_written() {
        let only = [
            "endpoint=a,cache_state=warm".to_string(),
            " endpoint = b ,endpoint=a".to_string(),
        ];
        let f = parse(&only).unwrap();
        assert_eq!(
            f,
            [
                (
                    "endpoint".to_string(),
                    vec!["a".to_string(), "b".to_string()]
                ),
                ("cache_state".to_string(), vec!["warm".to_string()]),
            ]
        );
        assert!(parse(&["endpoint".to_string()])
            .unwrap_err()
            .contains("key=value"));
    }

    #[test]
    fn long_lists_are_cut_with_a_count() {
        let items: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        let text = listed(&items);
        assert!(
            text.starts_with("0, 1, 2") && text.ends_with(", … (20 in all)"),
            "{text}"
        );
        assert_eq!(listed(&[]), "none");
    }
}
