//! Every numeric key of the plan schema (enumerated from the schema, so a key added later
//! is covered) gets extreme values: zero, tiny, huge, negative, infinite, NaN and a string
//! where a number belongs. Each is either rejected by validation with an error at the
//! value, or the plan runs against the simulator and ends by itself (or on Ctrl-C): never
//! a panic (exit 70), never a hang, never a rejection only once running.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use perfplan::plan::{load_plan, plan_schema, LoadOptions};
use serde_json::{json, Value};

/// Where the tables of each schema definition with numeric keys sit in a plan. A new
/// table with numbers needs a row here; the test says so.
const PLACES: &[(&str, &[&str])] = &[
    ("PlanMeta", &["plan"]),
    ("EndpointSpec", &["endpoints", "s"]),
    ("TimeoutsSpec", &["endpoints", "s", "timeouts"]),
    ("LimitsSpec", &["endpoints", "s", "limits"]),
    ("TelemetrySpec", &["endpoints", "s", "telemetry"]),
    ("HardwareSpec", &["endpoints", "s", "hardware"]),
    ("SimConfig", &["endpoints", "s", "sim"]),
    ("DatasetSpec", &["datasets", "d"]),
    ("RequestSpec", &["defaults"]),
    ("LoadSpec", &["matrix", "load"]),
    ("RampSpec", &["matrix", "load", "ramp"]),
    (
        "ConcurrencyRampSpec",
        &["matrix", "load", "concurrency_ramp"],
    ),
    ("ExploreSpec", &["matrix", "load", "explore"]),
    ("CancelSpec", &["matrix", "load", "cancel"]),
    ("ChecksSpec", &["checks"]),
    ("ReportSpec", &["report"]),
    ("TrustSpec", &["trust"]),
    ("MixClassSpec", &["datasets", "d", "mix", "0"]),
];

/// What a key's value may be.
#[derive(Debug, Default, Clone, Copy)]
struct Shape {
    integer: bool,
    number: bool,
    duration: bool,
    /// A `{min, max}` table of numbers.
    pair: bool,
    /// A list (of numbers).
    list: bool,
}

#[derive(Debug)]
struct Key {
    place: &'static [&'static str],
    name: String,
    shape: Shape,
}

fn shape_of(root: &Value, s: &Value, out: &mut Shape, depth: usize) {
    if depth > 8 {
        return;
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        if name == "Duration" {
            out.duration = true;
            return;
        }
        shape_of(root, &root["$defs"][name], out, depth + 1);
    }
    for list in ["anyOf", "oneOf"] {
        for b in s.get(list).and_then(Value::as_array).into_iter().flatten() {
            shape_of(root, b, out, depth + 1);
        }
    }
    if let Some(items) = s.get("items") {
        out.list = true;
        shape_of(root, items, out, depth + 1);
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    out.integer |= types.contains(&"integer");
    out.number |= types.contains(&"number");
    let props = s.get("properties");
    out.pair |= types.contains(&"object")
        && props.is_some_and(|p| p.get("min").is_some() && p.get("max").is_some());
}

/// Every key of every table that takes a number or a duration.
fn numeric_keys(root: &Value) -> Vec<Key> {
    let mut keys = Vec::new();
    for (def, schema) in root["$defs"].as_object().unwrap() {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        if def == "MatrixSpec" {
            continue; // its axes are the dataset and request keys, checked as axes below
        }
        for (name, prop) in props {
            let mut shape = Shape::default();
            shape_of(root, prop, &mut shape, 0);
            if !(shape.integer || shape.number || shape.duration) {
                continue;
            }
            let place = PLACES
                .iter()
                .find(|(d, _)| d == def)
                .unwrap_or_else(|| panic!("`{def}.{name}` takes a number: add `{def}` to PLACES"))
                .1;
            keys.push(Key {
                place,
                name: name.clone(),
                shape,
            });
        }
    }
    keys
}

fn tokenizer() -> String {
    std::fs::canonicalize("tests/fixtures/smollm2")
        .unwrap()
        .display()
        .to_string()
}

/// Plans a key may need to mean anything: each load form and each dataset kind.
fn contexts(dir: &Path) -> Vec<Value> {
    let base = json!({
        "plan": {"name": "ranges", "seed": 1},
        "endpoints": {"s": {
            "base_url": "sim://s",
            "timeouts": {"read": "5s", "total": "5s"},
            "sim": {"ttft_base": "1ms", "itl_base": "1ms"}
        }},
        "models": {"m": {"tokenizer": tokenizer()}},
        "datasets": {"d": {"kind": "prompt", "text": "hello"}},
        "defaults": {"output_tokens": 2},
        "matrix": {"load": {"concurrency": 1, "requests": 2}}
    });
    std::fs::write(dir.join("lines.txt"), "one\ntwo\nthree\n").unwrap();
    let trace = std::fs::canonicalize("tests/fixtures/trace-sample.jsonl").unwrap();
    let mooncake = std::fs::canonicalize("tests/fixtures/traces/mooncake.jsonl").unwrap();
    let slo = json!({"success_ratio": ">= 0"});
    let loads = [
        json!({"rate": 50, "requests": 2}),
        json!({"rate": 50, "requests": 2, "arrivals": "gamma"}),
        json!({"concurrency": 1, "duration": "100ms"}),
        json!({"search": "concurrency", "slo": slo, "min": 1, "max": 2, "requests_per_step": 2}),
        json!({"search": "rate", "slo": slo, "min": 1, "max": 2, "requests_per_step": 2}),
        json!({"ramp": {"from": 20, "to": 40, "over": "100ms"}}),
        json!({"ramp": {"rates": [20, 40], "step": "1s"}}),
        json!({"concurrency_ramp": {"from": 1, "to": 2, "over": "100ms"}}),
        json!({"concurrency_ramp": {"concurrencies": [1, 2], "step": "100ms"}}),
        json!({"explore": {"max": 2, "step": "100ms", "probes": 0}}),
        json!({"concurrency": 1, "requests": 2, "cancel": {"share": 0.5, "after": "10ms", "settle": "100ms"}}),
    ];
    let datasets = [
        (json!({"kind": "random", "input_tokens": 8}), None),
        (
            json!({"kind": "random", "input_tokens": 8, "prefix_tokens": 2, "prefix_groups": 1}),
            None,
        ),
        (
            json!({"kind": "random_images", "width": 8, "height": 8}),
            None,
        ),
        (json!({"kind": "random_multi_turn", "turns": 2}), None),
        (json!({"kind": "tool_calls", "turns": 1}), None),
        (json!({"kind": "lines", "path": "lines.txt"}), None),
        (
            json!({"kind": "random_embedding", "input_tokens": 4}),
            Some("embeddings"),
        ),
        (
            json!({"kind": "random_rerank", "query_tokens": 4}),
            Some("rerank"),
        ),
        (json!({"kind": "trace", "path": trace}), None),
        (
            json!({"kind": "trace", "path": mooncake, "format": "mooncake", "speed": 1000}),
            None,
        ),
    ];
    // A mix of one class (of the prompt dataset `c`), its steps `mix.0` an array's item.
    let mut mix = base.clone();
    mix["datasets"]["d"] = json!({"kind": "mix", "mix": [{"dataset": "c", "weight": 1}]});
    mix["datasets"]["c"] = json!({"kind": "prompt", "text": "hello"});
    mix["matrix"]["dataset"] = json!("d");
    // Golden requests (`[checks]` needs `share` or `per_run`).
    let mut checks = base.clone();
    checks["checks"] = json!({"per_run": 1});
    let mut out = vec![base.clone(), checks];
    for load in loads {
        let mut plan = base.clone();
        plan["matrix"]["load"] = load;
        out.push(plan);
    }
    for (dataset, api) in datasets {
        let mut plan = base.clone();
        plan["datasets"]["d"] = dataset;
        if let Some(api) = api {
            plan["matrix"]["api"] = json!(api);
        }
        out.push(plan);
    }
    out.push(mix);
    out
}

fn set(plan: &mut Value, place: &[&str], key: &str, value: Value) {
    let mut node = plan;
    for step in place {
        // A number steps into an array that has that item (a mix's class).
        if let (Ok(i), Some(items)) = (step.parse::<usize>(), node.as_array()) {
            if i < items.len() {
                node = &mut node[i];
                continue;
            }
        }
        if node.get(*step).is_none() {
            node[*step] = json!({});
        }
        node = node.get_mut(*step).unwrap();
    }
    node[key] = value;
}

/// Writes `plan` as YAML (JSON is YAML), with `@@nan@@`-style strings as bare YAML
/// floats (`.nan`, `.inf`, `-.inf`), so every key has a line of its own.
fn write_plan(dir: &Path, name: &str, plan: &Value) -> std::path::PathBuf {
    let text = serde_json::to_string_pretty(plan)
        .unwrap()
        .replace("\"@@nan@@\"", ".nan")
        .replace("\"@@inf@@\"", ".inf")
        .replace("\"@@-inf@@\"", "-.inf");
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// Where the entry at `path` is written (from its key to the end of its value), and
/// where its table's key is.
fn entry_places(text: &str, path: &[&str]) -> (std::ops::Range<usize>, usize) {
    let tree = perfplan::plan::yaml_src::parse(0, text).unwrap();
    let (parents, last) = path.split_at(path.len() - 1);
    let (grand, parent_key) = parents.split_at(parents.len() - 1);
    let step = |n: &'_ perfplan::plan::node::Node, k: &str| -> perfplan::plan::node::Node {
        match (k.parse::<usize>(), &n.kind) {
            (Ok(i), perfplan::plan::node::NodeKind::Seq(items)) => items[i].clone(),
            _ => n.get(k).unwrap().clone(),
        }
    };
    let grand = grand.iter().fold(tree.clone(), |n, k| step(&n, k));
    // An array's item has no key: its table's place is the item itself.
    if let (Ok(i), perfplan::plan::node::NodeKind::Seq(items)) =
        (parent_key[0].parse::<usize>(), &grand.kind)
    {
        let entry = items[i].entry(last[0]).unwrap();
        return (
            entry.key_span.start..entry.value.span.end,
            items[i].span.start,
        );
    }
    let parent = grand.entry(parent_key[0]).unwrap();
    let entry = parent.value.entry(last[0]).unwrap();
    (
        entry.key_span.start..entry.value.span.end,
        parent.key_span.start,
    )
}

/// `Ok(())` when the plan loads and expands; else its diagnostics.
fn validate(path: &Path) -> Result<(), Vec<perfplan::plan::diag::Diagnostic>> {
    let opts = LoadOptions::new(Vec::new(), &no_env);
    match load_plan(path, &opts) {
        Ok(plan) => perfplan::planner::expand(&plan).map(|_| ()),
        Err(report) => Err(report.diagnostics),
    }
}

/// Validation rejects the plan with an error inside the entry at `at`, or (a setting
/// checked with its neighbours) at its table's key or underlining the table holding it.
fn rejected_at(path: &Path, at: &[&str]) -> bool {
    let Err(diags) = validate(path) else {
        return false;
    };
    let (range, table) = entry_places(&std::fs::read_to_string(path).unwrap(), at);
    let located = diags.iter().filter(|d| d.is_error()).any(|d| {
        d.span.is_some_and(|s| {
            let holds = s.start > 0 && s.start <= range.start && range.end <= s.end;
            s.file == 0 && (range.contains(&s.start) || s.start == table || holds)
        })
    });
    let all: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
    assert!(
        located,
        "{}: rejected, but no error stands at `{}`: {all:?}",
        path.display(),
        at.join(".")
    );
    true
}

fn key_path(key: &Key) -> Vec<&str> {
    let mut path = key.place.to_vec();
    path.push(&key.name);
    path
}

/// A value inside the key's range, to find a context where the key means something.
fn sane_values(shape: Shape) -> Vec<Value> {
    let mut out = Vec::new();
    if shape.integer || shape.number {
        out.extend([json!(2), json!(1), json!(0.5), json!(0)]);
    }
    if shape.list {
        out.push(json!([2]));
    }
    if shape.duration {
        out.extend([json!("100ms"), json!("1s")]);
    }
    out
}

fn extremes(shape: Shape) -> Vec<Value> {
    let mut out = Vec::new();
    if shape.integer || shape.number {
        out.extend([
            json!(0),
            json!(1e-9),
            json!(1_000_000_000_000_000_i64),
            json!(1e300),
            json!(-1),
            json!("@@nan@@"),
            json!("@@inf@@"),
            json!("@@-inf@@"),
            json!("NaN"),
        ]);
    }
    if shape.pair {
        out.extend([json!({"min": 0, "max": 1e15}), json!({"min": -1, "max": 1})]);
    }
    if shape.duration {
        let durations = ["0s", "1ns", "999999999s", "-1s", "NaNs", "infs", "1e9s"];
        out.extend(durations.iter().map(|d| json!(d)));
    }
    if shape.list {
        let items: Vec<Value> = out.iter().map(|v| json!([v])).collect();
        out.extend(items);
    }
    out
}

/// The first context in which the key, at a sane value, makes a valid plan.
fn context_for(dir: &Path, k: usize, key: &Key, contexts: &[Value]) -> Value {
    for value in sane_values(key.shape) {
        for plan in contexts {
            let mut plan = plan.clone();
            set(&mut plan, key.place, &key.name, value.clone());
            let path = write_plan(dir, &format!("sane-k{k}.yaml"), &plan);
            if validate(&path).is_ok() {
                return plan;
            }
        }
    }
    panic!(
        "no context makes `{}.{}` valid at a sane value: add one to contexts()",
        key.place.join("."),
        key.name
    );
}

/// Runs a valid plan: it must end by itself (or on Ctrl-C), without a panic or an exit
/// code that says it was invalid after all.
fn run_cleanly(dir: &Path, plan_path: &Path, what: &str) {
    let out = dir.join(format!(
        "out-{}",
        plan_path.file_stem().unwrap().to_string_lossy()
    ));
    let mut child = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["run", plan_path.to_str().unwrap(), "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut interrupted = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let waited = start.elapsed();
        if waited > Duration::from_secs(40) && !interrupted {
            let pid = child.id().to_string();
            Command::new("kill").args(["-INT", &pid]).status().unwrap();
            interrupted = true;
        }
        if waited > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{what}: `perfplan run` hangs, even after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let code = status.code();
    assert!(
        matches!(code, Some(0 | 1 | 3 | 4 | 130)),
        "{what}: `perfplan run` exited with {code:?}:\n{stderr}"
    );
}

#[test]
fn every_numeric_key_rejects_or_survives_extreme_values() {
    let dir = tempfile::tempdir().unwrap();
    let root = plan_schema();
    let keys = numeric_keys(&root);
    assert!(keys.len() > 60, "only {} numeric keys found", keys.len());
    let contexts = contexts(dir.path());
    // Two workers, every other key each: most of the time is the runs' own waiting and
    // the tokenizer's loading, and every file a key writes is named by its key.
    let (rejected, ran) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let (keys, contexts, dir) = (&keys, &contexts, dir.path());
                scope.spawn(move || {
                    let mut counts = (0, 0);
                    for (k, key) in keys.iter().enumerate().skip(w).step_by(2) {
                        let (r, n) = check_key(dir, k, key, contexts);
                        counts = (counts.0 + r, counts.1 + n);
                    }
                    counts
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    eprintln!("{} keys: {rejected} values rejected, {ran} run", keys.len());
}

/// Each extreme value of one key: rejected where it stands, or run to a clean end.
/// Returns (values rejected, values run).
fn check_key(dir: &Path, k: usize, key: &Key, contexts: &[Value]) -> (usize, usize) {
    let context = context_for(dir, k, key, contexts);
    let (mut rejected, mut ran) = (0, 0);
    for (v, value) in extremes(key.shape).into_iter().enumerate() {
        let what = format!("{}.{} = {value}", key.place.join("."), key.name);
        let mut plan = context.clone();
        set(&mut plan, key.place, &key.name, value.clone());
        let path = write_plan(dir, &format!("k{k}-v{v}.yaml"), &plan);
        if rejected_at(&path, &key_path(key)) {
            rejected += 1;
            let axis = format!("axis-k{k}-v{v}.yaml");
            axis_form_agrees(dir, &axis, key, &plan, &value, &what);
            continue;
        }
        ran += 1;
        run_cleanly(dir, &path, &what);
    }
    (rejected, ran)
}

/// A dataset or request key rejected in its table is rejected as a matrix axis too.
fn axis_form_agrees(dir: &Path, name: &str, key: &Key, plan: &Value, value: &Value, what: &str) {
    // A mix class's keys (`datasets.d.mix.0`) are no axes.
    if !matches!(key.place.first(), Some(&"datasets") | Some(&"defaults")) || key.place.len() > 2 {
        return;
    }
    let mut plan = plan.clone();
    let table = key
        .place
        .iter()
        .fold(&mut plan, |n, s| n.get_mut(*s).unwrap());
    table.as_object_mut().unwrap().remove(&key.name);
    plan["matrix"][&key.name] = json!([value]);
    let path = write_plan(dir, name, &plan);
    assert!(
        rejected_at(&path, &["matrix", &key.name]),
        "{what}: rejected in its table, accepted as an axis"
    );
}

/// How the book's range table names the table of each schema definition.
const RANGE_TABLES: &[(&str, &str)] = &[
    ("PlanMeta", "`[plan]`"),
    ("EndpointSpec", "`[endpoints.NAME]`"),
    ("TimeoutsSpec", "`timeouts`"),
    ("LimitsSpec", "`limits`"),
    ("TelemetrySpec", "`telemetry`"),
    ("HardwareSpec", "`hardware`"),
    ("SimConfig", "`[endpoints.NAME.sim]`"),
    ("DatasetSpec", "`[datasets.NAME]`"),
    ("RequestSpec", "`[defaults]`"),
    ("LoadSpec", "`load`"),
    ("RampSpec", "`ramp`"),
    ("ConcurrencyRampSpec", "`concurrency_ramp`"),
    ("ExploreSpec", "`explore`"),
    ("CancelSpec", "`cancel`"),
    ("ChecksSpec", "`[checks]`"),
    ("ReportSpec", "`[report]`"),
    ("TrustSpec", "`[trust]`"),
    ("MixClassSpec", "`mix` class"),
];

/// The range table of the book's "What validation checks" (`docs/src/plan/validation.md`)
/// has a row for every numeric key, with the schema's range.
#[test]
fn book_lists_every_range() {
    let root = plan_schema();
    let readme = std::fs::read_to_string("docs/src/plan/validation.md").unwrap();
    let mut expected = Vec::new();
    for (def, table) in RANGE_TABLES {
        let props = root["$defs"][def]["properties"].as_object().unwrap();
        for (name, prop) in props {
            let mut shape = Shape::default();
            shape_of(&root, prop, &mut shape, 0);
            if !(shape.integer || shape.number || shape.duration) {
                continue;
            }
            let row = match perfplan::plan::bounds::range_text(prop) {
                Some(range) => format!("| {table} | `{name}` | {range} |"),
                None => format!("| {table} | `{name}` |"),
            };
            expected.push(row);
        }
    }
    let missing: Vec<&String> = expected
        .iter()
        .filter(|r| !readme.contains(r.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/src/plan/validation.md's range table lacks these rows (or their range differs):\n{}",
        missing
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let keys = numeric_keys(&root);
    assert_eq!(expected.len(), keys.len(), "RANGE_TABLES misses a table");
}

/// The longest think time (an hour) is a wait, not a hang: Ctrl-C ends the run at once
/// (it used to block the whole runtime, so that not even a second Ctrl-C was heard).
#[test]
fn ctrl_c_ends_a_long_think_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut plan = contexts(dir.path()).remove(0);
    plan["datasets"]["d"] = json!({"kind": "random_multi_turn", "turns": 3, "think_time": "1h"});
    plan["matrix"]["load"] = json!({"concurrency": 1, "requests": 3, "warmup": 1});
    let path = write_plan(dir.path(), "think.yaml", &plan);
    assert!(validate(&path).is_ok());
    let mut child = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["run", path.to_str().unwrap(), "--out"])
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first turns are answered within a second; then every conversation thinks.
    std::thread::sleep(Duration::from_secs(3));
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("a run thinking for an hour does not stop on Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130), "interrupted");
}
