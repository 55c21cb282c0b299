//! Every key of every table is checked, at any depth: the schema is walked so that no
//! table (a new one included) escapes the unknown-key check, and the matrix's entries,
//! `--set` paths, keys without effect, repeated runs and `--only` filters are errors
//! that say what exists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use perfplan::plan::{load_plan, plan_schema, LoadOptions};
use serde_json::{json, Value};

/// Tables whose keys are names the plan chooses, and how those names are checked: by
/// path, or by the key holding them wherever it is (`extra` as an axis or in an entry).
const NAMED: &[(&str, &str)] = &[
    ("endpoints", "endpoint names, referenced by the matrix"),
    ("models", "model names, referenced by the matrix"),
    ("datasets", "dataset names, referenced by the matrix"),
    ("headers", "HTTP header names"),
    ("model_mapping", "model names of a trace"),
    ("extra", "free-form request body fields"),
    (
        "labels",
        "free-form facts recorded in the environment (values must be strings)",
    ),
    (
        "matrix.exclude[0].load.slo",
        "metric names, matched as written (an entry matching no run is an error)",
    ),
];
/// Tables whose keys are metric names: an unknown one is an error there.
const METRIC_KEYED: &[&str] = &[
    "slo",
    "gates",
    "matrix.load.slo",
    "matrix.load[0].slo",
    "matrix.include[0].load.slo",
];

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index,
}

fn text(path: &[Step]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => out.push_str(&format!(".{k}")),
            Step::Index => out.push_str("[0]"),
        }
    }
    out
}

/// Every table of the schema, by path: its property names (empty for a table of names).
fn tables(root: &Value) -> BTreeMap<String, (Vec<Step>, Vec<String>)> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut Vec::new(), &mut out, 0);
    out
}

fn walk(
    root: &Value,
    s: &Value,
    path: &mut Vec<Step>,
    out: &mut BTreeMap<String, (Vec<Step>, Vec<String>)>,
    depth: usize,
) {
    assert!(depth < 40, "schema nests too deep at {}", text(path));
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        walk(root, &root["$defs"][name], path, out, depth + 1);
    }
    for list in ["anyOf", "oneOf"] {
        for b in s.get(list).and_then(Value::as_array).into_iter().flatten() {
            walk(root, b, path, out, depth + 1);
        }
    }
    if let Some(items) = s.get("items") {
        path.push(Step::Index);
        walk(root, items, path, out, depth + 1);
        path.pop();
    }
    let props = s.get("properties").and_then(Value::as_object);
    if let Some(props) = props {
        assert_eq!(
            s.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "the table at `{}` takes any key: give it deny_unknown_fields",
            text(path)
        );
        let names = props.keys().cloned().collect();
        out.insert(text(path), (path.clone(), names));
        for (k, sub) in props {
            path.push(Step::Key(k.clone()));
            walk(root, sub, path, out, depth + 1);
            path.pop();
        }
    } else if let Some(extra) = s.get("additionalProperties").filter(|a| a.is_object()) {
        out.entry(text(path))
            .or_insert_with(|| (path.clone(), Vec::new()));
        path.push(Step::Key("x".into()));
        walk(root, extra, path, out, depth + 1);
        path.pop();
    } else if s.get("type") == Some(&json!("object")) {
        out.entry(text(path))
            .or_insert_with(|| (path.clone(), Vec::new()));
    }
}

/// A document holding `leaf` at `path` and nothing else.
fn document(path: &[Step], leaf: Value) -> Value {
    match path.split_first() {
        None => leaf,
        Some((Step::Key(k), rest)) => json!({ k.clone(): document(rest, leaf) }),
        Some((Step::Index, rest)) => json!([document(rest, leaf)]),
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// The errors of a plan written as YAML (JSON is YAML), with the text.
fn errors_of(dir: &Path, doc: &Value) -> (Vec<perfplan::plan::diag::Diagnostic>, String) {
    let text = serde_json::to_string_pretty(doc).unwrap();
    let path = dir.join("walk.yaml");
    std::fs::write(&path, &text).unwrap();
    let report = load_plan(&path, &LoadOptions::new(Vec::new(), &no_env))
        .map(|_| panic!("accepted: {text}"))
        .unwrap_err();
    (report.diagnostics, text)
}

/// A misspelling of one of `names` (the longest, its last letter dropped).
fn misspelt(names: &[String]) -> (String, String) {
    let right = names.iter().max_by_key(|n| n.len()).unwrap().clone();
    let wrong = right[..right.len() - 1].to_string();
    assert!(!names.contains(&wrong), "{wrong} is a key too");
    (wrong, right)
}

#[test]
fn an_unknown_key_in_any_table_is_an_error_at_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let all = tables(&plan_schema());
    assert!(all.len() > 40, "only {} tables found", all.len());
    for (at, (path, names)) in &all {
        if names.is_empty() {
            check_named_table(dir.path(), at, path);
            continue;
        }
        let (wrong, right) = misspelt(names);
        let (diags, text) = errors_of(dir.path(), &document(path, json!({ wrong.clone(): 1 })));
        let key_at = text.find(&format!("\"{wrong}\"")).unwrap();
        let hit = diags.iter().find(|d| {
            d.message.starts_with(&format!("unknown key `{wrong}`"))
                && d.span.is_some_and(|s| s.start == key_at)
        });
        let hit = hit
            .unwrap_or_else(|| panic!("`{at}`: `{wrong}` is not an error at the key: {diags:?}"));
        assert_eq!(
            hit.help.as_deref(),
            Some(format!("did you mean `{right}`?").as_str()),
            "`{at}`"
        );
    }
}

/// A table of names is one the test knows (and says how its names are checked); one
/// keyed by metric names rejects an unknown metric at the entry holding it.
fn check_named_table(dir: &Path, at: &str, path: &[Step]) {
    if METRIC_KEYED.contains(&at) {
        let mut doc = document(path, json!({ "ttft_p98": "<= 2s" }));
        if at.contains("load") {
            let load = match at {
                "matrix.load" | "matrix.load.slo" => &mut doc["matrix"]["load"],
                "matrix.load[0].slo" => &mut doc["matrix"]["load"][0],
                _ => &mut doc["matrix"]["include"][0]["load"],
            };
            load["search"] = json!("concurrency");
        }
        let base = json!({"plan": {"name": "n"}, "endpoints": {"e": {"base_url": "sim://e"}},
            "models": {"m": {}}, "datasets": {"d": {"kind": "prompt", "text": "x"}}});
        for (k, v) in base.as_object().unwrap() {
            doc[k] = v.clone();
        }
        let text = serde_json::to_string_pretty(&doc).unwrap();
        let plan = dir.join("metric.yaml");
        std::fs::write(&plan, &text).unwrap();
        let key_at = text.find("\"ttft_p98\"").unwrap();
        let diags = match load_plan(&plan, &LoadOptions::new(Vec::new(), &no_env)) {
            Err(report) => report.diagnostics,
            Ok(loaded) => perfplan::planner::expand(&loaded).unwrap_err(),
        };
        let located = diags.iter().any(|d| {
            d.message.contains("ttft_p98")
                && d.span
                    .is_some_and(|s| s.start <= key_at && key_at < s.end.max(s.start + 1))
        });
        assert!(
            located,
            "`{at}`: an unknown metric is not an error there: {diags:?}"
        );
        return;
    }
    let last = at.trim_end_matches("[0]").rsplit('.').next().unwrap();
    let nested = matches!(last, "headers" | "model_mapping" | "extra" | "labels");
    assert!(
        NAMED.iter().any(|(p, _)| *p == at || (nested && *p == last)),
        "`{at}` is a table of free names: check its keys, or add it to NAMED saying how they are checked"
    );
}

const PLAN: &str = r#"[plan]
name = "k"

[endpoints.on]
base_url = "sim://on"
[endpoints.on.sim]
ttft_base = "1ms"
itl_base = "1ms"

[endpoints.off]
base_url = "sim://off"

[models.m]

[datasets.d]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 2

[matrix]
endpoint = ["on", "off"]
cache_state = ["cold", "warm"]
load = [{ concurrency = 1, requests = 2, warmup = 1 }, { concurrency = 2, requests = 2, warmup = 2 }]
"#;

fn perfplan(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn expand(dir: &Path, plan: &str, extra: &[&str]) -> Result<Vec<Value>, String> {
    std::fs::write(dir.join("p.toml"), plan).unwrap();
    let mut args = vec!["expand", "p.toml", "--json"];
    args.extend_from_slice(extra);
    let out = perfplan(dir, &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => Ok(serde_json::from_slice(&out.stdout).unwrap()),
        Some(2) => Err(stderr),
        other => panic!("expand exited with {other:?}: {stderr}"),
    }
}

fn axis(runs: &[Value], key: &str) -> Vec<String> {
    runs.iter()
        .map(|r| r["axes"].get(key).map_or("-".into(), |v| v.to_string()))
        .collect()
}

#[test]
fn a_misspelt_exclude_key_no_longer_runs_what_it_meant_to_drop() {
    let dir = tempfile::tempdir().unwrap();
    let plan = format!("{PLAN}exclude = [{{ endpont = \"off\", cache_state = \"warm\" }}]\n");
    let err = expand(dir.path(), &plan, &[]).unwrap_err();
    assert!(
        err.contains("p.toml:26:14") && err.contains("did you mean `endpoint`?"),
        "{err}"
    );
    let plan = format!("{PLAN}exclude = [{{ endpoint = \"off\", cache_state = \"warm\" }}]\n");
    assert_eq!(expand(dir.path(), &plan, &[]).unwrap().len(), 6);
}

#[test]
fn set_of_a_key_the_file_does_not_set_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        "--set",
        "defaults.temperature=0.5",
        "--set",
        "endpoints.off.sim.seed=3",
    ];
    let runs = expand(dir.path(), PLAN, &sets).unwrap();
    assert!(runs
        .iter()
        .all(|r| r["settings"]["request"]["temperature"] == 0.5));
    let off = runs
        .iter()
        .find(|r| r["axes"]["endpoint"] == "off")
        .unwrap();
    assert_eq!(off["settings"]["endpoint"]["sim"]["seed"], 3);
    let whole = [
        "--set",
        "datasets.e={ kind = \"prompt\", text = \"x\" }",
        "--set",
        "matrix.dataset=e",
    ];
    let runs = expand(dir.path(), PLAN, &whole).unwrap();
    assert!(runs.iter().all(|r| r["settings"]["dataset"]["name"] == "e"));
    let err = expand(dir.path(), PLAN, &["--set", "datasets.dd.text=hi"]).unwrap_err();
    assert!(err.contains("did you mean `d`?"), "{err}");
}

#[test]
fn a_dataset_axis_applies_to_the_datasets_it_fits() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("q.txt"), "one\ntwo\n").unwrap();
    let tok = std::fs::canonicalize("tests/fixtures/smollm2").unwrap();
    let plan = PLAN
        .replace("[models.m]", &format!("[models.m]\ntokenizer = \"{}\"", tok.display()))
        .replace(
            "[defaults]",
            "[datasets.r]\nkind = \"random\"\n\n[datasets.l]\nkind = \"lines\"\npath = \"q.txt\"\n\n[defaults]",
        )
        .replace(
            "endpoint = [\"on\", \"off\"]\ncache_state = [\"cold\", \"warm\"]\nload = [{ concurrency = 1, requests = 2, warmup = 1 }, { concurrency = 2, requests = 2, warmup = 2 }]",
            "endpoint = \"on\"\ndataset = [\"r\", \"l\"]\ninput_tokens = [8, 16]\nload = { concurrency = 1, requests = 2, warmup = 1 }",
        );
    let runs = expand(dir.path(), &plan, &[]).unwrap();
    assert_eq!(axis(&runs, "dataset"), ["\"r\"", "\"r\"", "\"l\""]);
    assert_eq!(axis(&runs, "input_tokens"), ["8", "16", "-"]);
    assert!(runs[2]["settings"]["dataset"].get("input_tokens").is_none());
}

#[test]
fn only_with_several_filters() {
    let dir = tempfile::tempdir().unwrap();
    let only = |filters: &[&str]| {
        let args: Vec<&str> = filters.iter().flat_map(|f| ["--only", *f]).collect();
        expand(dir.path(), PLAN, &args)
    };
    // One key given twice: either value. Different keys: all of them.
    let either = only(&["endpoint=on,endpoint=off"]).unwrap();
    assert_eq!(either.len(), 8);
    let both = only(&["endpoint=off", "cache_state=warm,concurrency=2"]).unwrap();
    assert_eq!(axis(&both, "endpoint"), ["\"off\""]);
    assert_eq!(axis(&both, "cache_state"), ["\"warm\""]);
    let err = only(&["endpoint=typo"]).unwrap_err();
    assert!(err.contains("on, off"), "{err}");
    let err = only(&["endpont=on"]).unwrap_err();
    assert!(err.contains("did you mean `endpoint`?"), "{err}");
}

#[test]
fn run_with_an_only_that_matches_nothing_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PLAN).unwrap();
    let out = perfplan(
        dir.path(),
        &["run", "p.toml", "--only", "endpoint=typo", "--out", "o"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("endpoint `typo`") && stderr.contains("on, off"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("o").exists(),
        "no output folder for a run of nothing"
    );
}

#[test]
fn only_names_the_one_endpoint_model_and_dataset_of_a_plan_without_those_axes() {
    let dir = tempfile::tempdir().unwrap();
    // One endpoint, model and dataset, none of them an axis: `--only` still selects by
    // their names, as reports label the runs.
    let one = PLAN
        .replace("[endpoints.off]\nbase_url = \"sim://off\"\n", "")
        .replace("endpoint = [\"on\", \"off\"]\n", "");
    let all = expand(dir.path(), &one, &[]).unwrap();
    assert_eq!(all.len(), 4);
    let by_name = expand(
        dir.path(),
        &one,
        &["--only", "endpoint=on,model=m,dataset=d"],
    )
    .unwrap();
    assert_eq!(by_name.len(), all.len());
    let err = expand(dir.path(), &one, &["--only", "endpoint=off"]).unwrap_err();
    assert!(err.contains("endpoint takes: on"), "{err}");
}
