//! The plan language and planner through the binary: located errors, exit codes,
//! TOML/YAML equivalence, id stability.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .env("TOKENIZER_PATH", "/nonexistent/tokenizer")
        .output()
        .expect("run perfplan")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn expand_json(path: &str) -> Vec<Value> {
    let out = perfplan(&["expand", path, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn ids(runs: &[Value]) -> Vec<String> {
    runs.iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

const PLAN: &str = r#"
[plan]
name = "t"
seed = 1

[endpoints.on]
base_url = "http://127.0.0.1:9"
prefix_cache = "on"

[endpoints.off]
base_url = "http://127.0.0.1:10"
prefix_cache = "off"

[models.m]
served_name = "M"

[datasets.d]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 16

[matrix]
endpoint = ["on", "off"]
cache_state = ["cold", "warm"]
load = [{ concurrency = 1, requests = 4, warmup = 1 }, { concurrency = 4, requests = 8, warmup = 4 }]
exclude = [{ endpoint = "off", cache_state = "warm" }]
"#;

const PLAN_YAML: &str = r#"
plan: {name: t, seed: 1}
endpoints:
  on: {base_url: "http://127.0.0.1:9", prefix_cache: "on"}
  off: {base_url: "http://127.0.0.1:10", prefix_cache: "off"}
models:
  m: {served_name: M}
datasets:
  d: {kind: prompt, text: hello}
defaults:
  output_tokens: 16
matrix:
  endpoint: ["on", "off"]
  cache_state: [cold, warm]
  load:
    - {concurrency: 1, requests: 4, warmup: 1}
    - {concurrency: 4, requests: 8, warmup: 4}
  exclude:
    - {endpoint: "off", cache_state: warm}
"#;

#[test]
fn expand_lists_runs_in_documented_order() {
    let dir = tempfile::tempdir().unwrap();
    let runs = expand_json(&write(dir.path(), "p.toml", PLAN));
    let order: Vec<(String, String, u64)> = runs
        .iter()
        .map(|r| {
            let a = &r["axes"];
            (
                a["endpoint"].as_str().unwrap().into(),
                a["cache_state"].as_str().unwrap().into(),
                a["load"]["concurrency"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("on", "cold", 1),
        ("on", "cold", 4),
        ("on", "warm", 1),
        ("on", "warm", 4),
        ("off", "cold", 1),
        ("off", "cold", 4),
    ];
    let expected: Vec<(String, String, u64)> = expected
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), *c))
        .collect();
    assert_eq!(order, expected);
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r["ordinal"], i + 1);
        assert_eq!(r["id"].as_str().unwrap().len(), 12);
    }
}

#[test]
fn toml_and_yaml_expand_identically() {
    let dir = tempfile::tempdir().unwrap();
    let a = expand_json(&write(dir.path(), "p.toml", PLAN));
    let b = expand_json(&write(dir.path(), "p.yaml", PLAN_YAML));
    assert_eq!(a, b);
}

#[test]
fn comments_change_no_id_and_a_setting_changes_only_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let base = ids(&expand_json(&write(dir.path(), "a.toml", PLAN)));
    let commented = PLAN.replace("[defaults]", "# a comment\n[defaults] # another");
    assert_eq!(
        ids(&expand_json(&write(dir.path(), "b.toml", &commented))),
        base
    );
    let changed = PLAN.replace("http://127.0.0.1:10", "http://127.0.0.1:11");
    let after = ids(&expand_json(&write(dir.path(), "c.toml", &changed)));
    assert_eq!(
        after[..4],
        base[..4],
        "runs of endpoint `on` keep their ids"
    );
    assert!(
        after[4..].iter().zip(&base[4..]).all(|(x, y)| x != y),
        "runs of `off` change"
    );
}

#[test]
fn run_id_is_golden() {
    let dir = tempfile::tempdir().unwrap();
    let runs = expand_json(&write(dir.path(), "p.toml", PLAN));
    // Pinned: the id is a hash of canonical settings and must be the same on every machine.
    // A change here means every stored suite's ids change: only with a migration note.
    assert_eq!(runs[0]["id"], "775f2f7d9b79", "{}", runs[0]);
}

#[test]
fn labels_keep_every_run_id_and_take_only_strings() {
    let dir = tempfile::tempdir().unwrap();
    let labelled = PLAN
        .replace("seed = 1", "seed = 1\nlabels = { release = \"1.8.0-rc2\" }")
        .replace(
            "prefix_cache = \"on\"",
            "prefix_cache = \"on\"\nlabels = { gpu = \"H100\", flags = \"--tp 2\" }",
        );
    let runs = expand_json(&write(dir.path(), "l.toml", &labelled));
    assert_eq!(runs[0]["id"], "775f2f7d9b79", "{}", runs[0]);
    assert_eq!(
        ids(&runs),
        ids(&expand_json(&write(dir.path(), "p.toml", PLAN)))
    );
    let numeric = PLAN.replace("seed = 1", "seed = 1\nlabels = { release = 18 }");
    let out = perfplan(&["validate", &write(dir.path(), "n.toml", &numeric)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("n.toml:5"), "{err}");
}

#[test]
fn misspelt_key_is_located_with_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let bad = PLAN.replace("text = \"hello\"", "text = \"hello\"\ninput_token = 1024");
    let path = write(dir.path(), "bad.toml", &bad);
    let out = perfplan(&["validate", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:20:1"), "{err}");
    assert!(err.contains("did you mean `input_tokens`?"), "{err}");
    assert!(err.contains("input_token = 1024"), "{err}");
}

#[test]
fn all_problems_are_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let bad = PLAN
        .replace(
            "endpoint = [\"on\", \"off\"]",
            "endpoint = [\"on\", \"of\"]\ntemprature = [1.0]",
        )
        .replace("output_tokens = 16", "output_tokens = \"many\"");
    let out = perfplan(&["validate", &write(dir.path(), "bad.toml", &bad)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`of` is not a defined endpoint"), "{err}");
    assert!(err.contains("did you mean `off`?"), "{err}");
    assert!(err.contains("did you mean `temperature`?"), "{err}");
    assert!(err.contains("defaults.output_tokens"), "{err}");
    assert!(err.contains("3 errors"), "{err}");
}

/// Every problem of an endpoint's `limits` is reported at its key; good limits expand
/// and are part of the run's settings.
#[test]
fn response_limits_are_validated_at_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let bad = PLAN.replace(
        "prefix_cache = \"on\"",
        "prefix_cache = \"on\"\nlimits = { max_event = \"12B\", max_body = \"lots\", \
         overlong_factor = 0.5, max_chunks = 0, max_txt = \"1MiB\" }",
    );
    let out = perfplan(&["validate", &write(dir.path(), "bad.toml", &bad)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `max_text`?"), "{err}");
    assert!(err.contains("overlong_factor"), "{err}");
    assert!(err.contains("must be at least 1"), "{err}");
    assert!(err.contains("max_chunks"), "{err}");
    assert!(err.contains("bad.toml:9:"), "{err}");
    let bad = PLAN.replace(
        "prefix_cache = \"on\"",
        "prefix_cache = \"on\"\nlimits = { max_body = \"lots\" }",
    );
    let out = perfplan(&["validate", &write(dir.path(), "body.toml", &bad)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid byte size `lots`"), "{err}");
    let zero = PLAN.replace(
        "prefix_cache = \"on\"",
        "prefix_cache = \"on\"\nlimits = { max_event = \"0B\" }",
    );
    let out = perfplan(&["validate", &write(dir.path(), "zero.toml", &zero)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("limits.max_event = 0B: must be at least 1 byte")
            && err.contains("zero.toml:9:"),
        "{err}"
    );
    let small = zero.replace("\"0B\"", "\"12B\"");
    let out = perfplan(&["validate", &write(dir.path(), "small.toml", &small)]);
    assert!(out.status.success(), "a small limit is a warning");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("limits.max_event = 12B is below 1KiB") && err.contains("small.toml:9:"),
        "{err}"
    );
    let good = PLAN.replace(
        "prefix_cache = \"on\"",
        "prefix_cache = \"on\"\nlimits = { max_event = \"1MiB\", max_body = 1048576, \
         max_text = \"64KiB\", overlong_factor = 1.5, overlong_slack = 8, max_chunks = 1000 }",
    );
    let runs = expand_json(&write(dir.path(), "good.toml", &good));
    let limits = &runs[0]["settings"]["endpoint"]["limits"];
    assert_eq!(limits["max_event"], "1MiB", "{}", runs[0]);
    assert_eq!(limits["max_body"], "1MiB");
    let plain = expand_json(&write(dir.path(), "plain.toml", PLAN));
    assert_ne!(
        runs[0]["id"], plain[0]["id"],
        "a limit is a setting of the run"
    );
}

#[test]
fn impossible_settings_and_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN
        .replace(
            "kind = \"prompt\"\ntext = \"hello\"",
            "kind = \"random\"\ninput_tokens = 512\nprefix_tokens = 512",
        )
        .replace("warmup = 4 }", "warmup = 2 }");
    let out = perfplan(&["validate", &write(dir.path(), "p.toml", &plan)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("prefix_tokens (512) must be below input_tokens (512)"),
        "{err}"
    );

    // prefix_file needs target_input_len, and cannot be used with drop (as in EvalScope).
    write(dir.path(), "q.txt", "a question\n");
    write(dir.path(), "long.txt", "some long text\n");
    let plan = PLAN.replace(
        "kind = \"prompt\"\ntext = \"hello\"",
        "kind = \"lines\"\npath = \"q.txt\"\nprefix_file = \"long.txt\"\ninput_len_mode = \"drop\"",
    );
    let out = perfplan(&["validate", &write(dir.path(), "drop.toml", &plan)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`prefix_file` needs `target_input_len`"),
        "{err}"
    );
    assert!(
        err.contains("input_len_mode = \"drop\" keeps only prompts"),
        "{err}"
    );

    // Multi-turn conversations are chat: another API is refused before any run starts.
    let plan = PLAN
        .replace(
            "kind = \"prompt\"\ntext = \"hello\"",
            "kind = \"random_multi_turn\"\nturns = 2",
        )
        .replace(
            "cache_state = [",
            "api = [\"chat\", \"completions\"]\ncache_state = [",
        );
    let out = perfplan(&["validate", &write(dir.path(), "mt.toml", &plan)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("multi-turn datasets need api = \"chat\" (this run uses `completions`)"),
        "{err}"
    );

    let warn_only = PLAN.replace("warmup = 4 }", "warmup = 2 }");
    let out = perfplan(&["validate", &write(dir.path(), "w.toml", &warn_only)]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warmup 2 is below concurrency 4") && err.contains("use warmup = 4"),
        "{err}"
    );
}

#[test]
fn token_counts_need_a_tokenizer_and_matrix_lengths_count_as_set() {
    let dir = tempfile::tempdir().unwrap();
    // input_tokens only as a matrix axis: valid as written, checked per run.
    let random = PLAN.replace("kind = \"prompt\"\ntext = \"hello\"", "kind = \"random\"");
    let plan = random.replace("[matrix]", "[matrix]\ninput_tokens = [64, 128]");
    let out = perfplan(&["validate", &write(dir.path(), "p.toml", &plan)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dataset kind `random` needs the model's tokenizer, and model")
            && err.contains("set `tokenizer` on the model")
            && !err.contains("needs `input_tokens`"),
        "{err}"
    );
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/smollm2");
    let with_tok = add_tokenizer(&plan, fixture);
    let out = perfplan(&["validate", &write(dir.path(), "t.toml", &with_tok)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = perfplan(&[
        "validate",
        &write(dir.path(), "n.toml", &add_tokenizer(&random, fixture)),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs `input_tokens`"));
}

/// Gives the plan's model a tokenizer.
fn add_tokenizer(plan: &str, path: &str) -> String {
    let at = plan.find("[models.").unwrap();
    let end = at + plan[at..].find('\n').unwrap() + 1;
    format!("{}tokenizer = \"{path}\"\n{}", &plan[..end], &plan[end..])
}

#[test]
fn set_overrides_and_only_filters() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "p.toml", PLAN);
    let out = perfplan(&[
        "expand",
        &path,
        "--json",
        "--set",
        "defaults.output_tokens=99",
        "--set",
        "matrix.cache_state=cold",
        "--only",
        "endpoint=on",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs
        .iter()
        .all(|r| r["settings"]["request"]["output_tokens"] == 99));
    let out = perfplan(&["expand", &path, "--set", "defaults.output_tokens=lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--set:1:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn env_variables_and_imports() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("common")).unwrap();
    write(
        dir.path(),
        "common/endpoints.toml",
        "[endpoints.shared]\nbase_url = \"http://${PP_TEST_HOST:-127.0.0.1}:${PP_TEST_PORT}\"\n",
    );
    let plan = "imports = [\"common/endpoints.toml\"]\n[plan]\nname = \"i\"\n[models.m]\n[datasets.d]\nkind = \"prompt\"\ntext = \"x\"\n[matrix]\nload = { concurrency = 1, requests = 1, warmup = 1 }\n";
    let path = write(dir.path(), "p.toml", plan);
    let out = perfplan(&["validate", &path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`PP_TEST_PORT` is not set"));
    let out = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["expand", &path, "--json"])
        .env("PP_TEST_PORT", "8123")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        runs[0]["settings"]["endpoint"]["base_url"],
        "http://127.0.0.1:8123"
    );

    let dup = format!("{plan}[endpoints.shared]\nbase_url = \"http://x:1\"\n");
    let out = perfplan(&["validate", &write(dir.path(), "dup.toml", &dup)]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("defined in two places") && err.contains("common/endpoints.toml:2:1"),
        "{err}"
    );
}

#[test]
fn secret_headers_are_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN.replace("prefix_cache = \"on\"", "prefix_cache = \"on\"\nheaders = { Authorization = \"Bearer sk-secret\", X-Trace = \"yes\" }");
    let out = perfplan(&["expand", &write(dir.path(), "p.toml", &plan), "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("sk-secret"));
    assert!(text.contains("<redacted>") && text.contains("\"yes\""));
}
