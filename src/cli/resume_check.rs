//! `run --resume DIR` continues the suite DIR holds, and only that suite: a plan whose
//! resolved settings (its file, its imports and its `--set` overrides, environment
//! variables expanded) differ from the stored plan's is refused before anything is sent,
//! naming the first setting that differs, so no database ever mixes runs of two plans.

use std::path::Path;

use serde_json::Value;

use super::rerun::stored_files;
use crate::plan::{load_plan, process_env, LoadOptions, LoadedPlan};
use crate::store::Store;

/// The first place two JSON trees differ: its dotted path and both values (`absent` when
/// one side lacks it).
pub(crate) fn first_difference(
    a: &Value,
    b: &Value,
    path: &str,
) -> Option<(String, String, String)> {
    let show = |v: Option<&Value>| v.map_or("absent".to_string(), Value::to_string);
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &join(k)),
                (p, q) => Some((join(k), show(p), show(q))),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &join(&i.to_string()))),
        _ if a == b => None,
        _ => Some((path.to_string(), show(Some(a)), show(Some(b)))),
    }
}

/// The plan the suite in `dir` stored, loaded as `rerun` loads it; `None` when it cannot be.
fn stored_plan(dir: &Path) -> Option<(LoadedPlan, Vec<String>)> {
    let suite = Store::open(dir).and_then(|s| s.suite()).ok()?;
    let (path, files) = stored_files(&suite.info);
    let opts = LoadOptions {
        files: Some(&files),
        ..LoadOptions::new(suite.info.set_overrides.clone(), &process_env)
    };
    let plan = load_plan(&path, &opts).ok()?;
    Some((plan, suite.info.set_overrides))
}

/// Why `plan` cannot continue the suite in `dir`, if it cannot (`None`: it is the same
/// plan, or the stored one cannot be read, which the resume itself then reports).
pub fn refusal(plan: &LoadedPlan, dir: &Path) -> Option<String> {
    let (stored, sets) = stored_plan(dir)?;
    let now = serde_json::to_value(&plan.spec).ok()?;
    let then = serde_json::to_value(&stored.spec).ok()?;
    let (at, was, is) = first_difference(&then, &now, "")?;
    let sets = if sets.is_empty() {
        String::new()
    } else {
        format!(" (it was run with --set {})", sets.join(" --set "))
    };
    Some(format!(
        "--resume {}: this plan differs from the one the suite ran{sets}: `{at}` was {was}, \
         is {is}; resuming would mix runs of two plans in one database. Resume with the same \
         plan and --set flags, or start a new suite (without --resume)",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_differing_setting_is_named() {
        let a = json!({"plan": {"name": "p", "seed": 42}, "datasets": {"d": {"input_tokens": 8}}});
        let b = json!({"plan": {"name": "p", "seed": 7}, "datasets": {"d": {"input_tokens": 8}}});
        assert_eq!(
            first_difference(&a, &b, ""),
            Some(("plan.seed".into(), "42".into(), "7".into()))
        );
        assert_eq!(first_difference(&a, &a, ""), None);
        let c = json!({"plan": {"name": "p", "seed": 42}});
        assert_eq!(
            first_difference(&a, &c, ""),
            Some((
                "datasets".into(),
                a["datasets"].to_string(),
                "absent".into()
            ))
        );
        let l = json!({"x": [1, 2]});
        let m = json!({"x": [1, 3]});
        assert_eq!(
            first_difference(&l, &m, "").map(|d| d.0),
            Some("x.1".into())
        );
    }
}
