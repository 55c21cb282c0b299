//! Groups of runs (one per command line) → one plan table. One group is a plain plan:
//! `[defaults]` and `[matrix] load`. Several become a `dataset` axis (a dataset per
//! command line) crossed with every load, the pairs no command ran excluded, and an
//! `include` per command carrying its endpoint, model and the settings it does not share.

use serde_json::{json, Map, Value};

use super::{Group, ImportError, Imported};
use crate::planner::matrix::value_matches;

/// Adds `table` under `section` by `name`, reusing a same-content entry; returns its name.
fn add_named(section: &mut Map<String, Value>, name: &str, table: &Map<String, Value>) -> String {
    if let Some((k, _)) = section.iter().find(|(_, v)| v.as_object() == Some(table)) {
        return k.clone();
    }
    let mut unique = name.to_string();
    let mut n = 2;
    while section.contains_key(&unique) {
        unique = format!("{name}-{n}");
        n += 1;
    }
    section.insert(unique.clone(), Value::Object(table.clone()));
    unique
}

fn plan_meta(groups: &[Group], notes: &mut Vec<String>) -> Map<String, Value> {
    let first = &groups[0];
    let mut meta = Map::new();
    let name = first
        .name
        .clone()
        .unwrap_or_else(|| format!("evalscope-{}", first.model_name));
    meta.insert("name".into(), name.into());
    meta.insert("seed".into(), first.seed.unwrap_or(0).into());
    if let Some(p) = &first.pause {
        meta.insert("pause_between_runs".into(), p.clone().into());
    }
    if groups
        .iter()
        .any(|g| g.seed != first.seed || g.pause != first.pause)
    {
        notes.push("the command lines set different `--seed` or `--sleep-interval`: the first one's is used for the plan".into());
    }
    meta
}

/// One plan from the groups of runs of every command line.
pub fn combine(groups: Vec<Group>) -> Result<Imported, ImportError> {
    let Some(first) = groups.first() else {
        return Err(ImportError::NoCommand);
    };
    let mut notes: Vec<String> = Vec::new();
    for g in &groups {
        for n in &g.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    let mut plan = Map::new();
    plan.insert("plan".into(), Value::Object(plan_meta(&groups, &mut notes)));
    plan.insert("report".into(), json!({ "metrics": "evalscope" }));
    if groups.len() == 1 {
        return Ok(single(first, plan, notes));
    }
    if groups.iter().any(|g| g.loads.is_empty()) {
        return Err(ImportError::Mismatch(
            "cannot combine a whole-trace replay (no `--number`) with other command lines into one plan; import them one at a time".into(),
        ));
    }
    let (mut endpoints, mut models, mut datasets) = (Map::new(), Map::new(), Map::new());
    let shared = shared_settings(&groups);
    let mut dataset_axis = Vec::new();
    let mut all_loads: Vec<Value> = Vec::new();
    let mut include = Vec::new();
    let mut tiers = Vec::new();
    for g in &groups {
        let mut entry = Map::new();
        let ds = add_unique(&mut datasets, &g.dataset_name, &g.dataset);
        entry.insert("dataset".into(), ds.clone().into());
        entry.insert(
            "endpoint".into(),
            add_named(&mut endpoints, &g.endpoint_name, &g.endpoint).into(),
        );
        entry.insert(
            "model".into(),
            add_named(&mut models, &g.model_name, &g.model).into(),
        );
        if g.tokenize_prompt {
            entry.insert("tokenize_prompt".into(), true.into());
        }
        for (k, v) in &g.request {
            if shared.get(k) != Some(v) {
                entry.insert(k.clone(), v.clone());
            }
        }
        for l in &g.loads {
            if !all_loads.contains(l) {
                all_loads.push(l.clone());
            }
        }
        dataset_axis.push(Value::from(ds.clone()));
        tiers.push((ds, g.loads.clone()));
        include.push(Value::Object(entry));
    }
    let exclude = exclusions(&tiers, &all_loads)?;
    plan.insert("endpoints".into(), Value::Object(endpoints));
    plan.insert("models".into(), Value::Object(models));
    plan.insert("datasets".into(), Value::Object(datasets));
    plan.insert("defaults".into(), Value::Object(shared));
    let mut matrix = Map::new();
    matrix.insert("dataset".into(), Value::Array(dataset_axis));
    matrix.insert("load".into(), Value::Array(all_loads));
    if !exclude.is_empty() {
        matrix.insert("exclude".into(), Value::Array(exclude));
    }
    matrix.insert("include".into(), Value::Array(include));
    plan.insert("matrix".into(), Value::Object(matrix));
    notes.push(format!(
        "{} command lines: one dataset each (the `dataset` axis), their endpoint, model and own settings in `include`",
        groups.len()
    ));
    Ok(Imported { plan, notes })
}

/// The plan of one command line: its tables, `[defaults]` and `[matrix] load`.
fn single(g: &Group, mut plan: Map<String, Value>, notes: Vec<String>) -> Imported {
    let named = |name: &str, table: &Map<String, Value>| {
        let mut m = Map::new();
        m.insert(name.to_string(), Value::Object(table.clone()));
        Value::Object(m)
    };
    plan.insert("endpoints".into(), named(&g.endpoint_name, &g.endpoint));
    plan.insert("models".into(), named(&g.model_name, &g.model));
    plan.insert("datasets".into(), named(&g.dataset_name, &g.dataset));
    plan.insert("defaults".into(), Value::Object(g.request.clone()));
    let mut matrix = Map::new();
    if g.tokenize_prompt {
        matrix.insert("tokenize_prompt".into(), true.into());
    }
    // A trace replayed whole has no load: every record at its recorded time.
    if !g.loads.is_empty() {
        matrix.insert("load".into(), Value::Array(g.loads.clone()));
    }
    plan.insert("matrix".into(), Value::Object(matrix));
    Imported { plan, notes }
}

/// Adds a dataset under a name of its own, even when another has the same content, so
/// each command line's runs are told apart by their dataset.
fn add_unique(section: &mut Map<String, Value>, name: &str, table: &Map<String, Value>) -> String {
    let mut unique = name.to_string();
    let mut n = 2;
    while section.contains_key(&unique) {
        unique = format!("{name}-{n}");
        n += 1;
    }
    section.insert(unique.clone(), Value::Object(table.clone()));
    unique
}

/// The request settings every command line has with the same value.
fn shared_settings(groups: &[Group]) -> Map<String, Value> {
    let mut shared = groups[0].request.clone();
    shared.retain(|k, v| groups.iter().all(|g| g.request.get(k) == Some(v)));
    shared
}

/// `exclude` entries dropping every (dataset, load) pair its command line did not run.
/// A load whose table matches another's partially would make an entry drop both: refused.
fn exclusions(tiers: &[(String, Vec<Value>)], all: &[Value]) -> Result<Vec<Value>, ImportError> {
    for a in all {
        for b in all {
            if a != b && value_matches(b, a) {
                return Err(ImportError::Mismatch(format!(
                    "cannot combine the command lines into one plan: load {a} is part of load {b}; import them one at a time"
                )));
            }
        }
    }
    let mut out = Vec::new();
    for (ds, loads) in tiers {
        for l in all.iter().filter(|l| !loads.contains(l)) {
            out.push(json!({"dataset": ds, "load": l}));
        }
    }
    Ok(out)
}
