//! What request bodies carry, seen on the wire by a simulator in the test process: the
//! output limit under each API's own name, extra body fields as matrix axes, `n > 1`,
//! token ranges of the rerank and image kinds, and `body_template` files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

mod cli_support;

use cli_support::{perfplan, query, report_json, run};
use perfplan::sim::{ReceivedRequest, SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::{json, Value};

fn sim_config() -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(2)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    }
}

fn fixture_tokenizer() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/smollm2")
        .display()
        .to_string()
}

/// Runs `body` (the plan after its endpoint) against a fresh simulator; returns what the
/// simulator received on `path` and the database.
async fn run_against_sim(
    dir: &Path,
    body: &str,
    path: &str,
) -> (Vec<ReceivedRequest>, std::path::PathBuf) {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let plan = format!(
        "[plan]\nname = \"fields\"\nseed = 5\n\n[endpoints.sim]\nbase_url = \"{}\"\n\n[models.m]\nserved_name = \"m\"\ntokenizer = \"{}\"\n\n{body}",
        sim.base_url(),
        fixture_tokenizer()
    );
    let plan_path = dir.join("plan.toml");
    std::fs::write(&plan_path, plan).unwrap();
    let out = dir.join("out");
    let db = tokio::task::spawn_blocking(move || run(&plan_path, &out))
        .await
        .unwrap();
    let received = sim
        .received()
        .into_iter()
        .filter(|r| r.path == path)
        .collect();
    sim.shutdown().await;
    (received, db)
}

/// Completion tokens of every stored request, as the server's usage reported them.
fn completion_tokens(db: &Path) -> Vec<i64> {
    query::<i64>(db, "SELECT completion_tokens FROM requests")
        .into_iter()
        .map(|row| row[0].unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_runs_limit_output_with_max_output_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
[datasets.rand]
kind = "random"
input_tokens = 32

[defaults]
output_tokens = 8
ignore_eos = true
max_completion_tokens = true

[matrix]
api = "responses"
load = { concurrency = 2, requests = 12, warmup = 2 }
"#;
    let (received, db) = run_against_sim(dir.path(), body, "/v1/responses").await;
    assert_eq!(received.len(), 14, "2 warmup + 12 measured requests");
    for r in &received {
        assert_eq!(r.body["max_output_tokens"], json!(8), "{}", r.body);
        assert!(r.body.get("max_tokens").is_none(), "{}", r.body);
        assert!(r.body.get("max_completion_tokens").is_none(), "{}", r.body);
    }
    let tokens = completion_tokens(&db);
    assert_eq!(tokens.len(), 14);
    assert!(tokens.iter().all(|&n| n == 8), "{tokens:?}");
}

fn expand_json(dir: &Path, plan: &str) -> Vec<Value> {
    let path = dir.join("expand.toml");
    std::fs::write(&path, plan).unwrap();
    let o = perfplan(&["expand", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn validate(dir: &Path, plan: &str) -> (bool, String) {
    let path = dir.join("validate.toml");
    std::fs::write(&path, plan).unwrap();
    let o = perfplan(&["validate", path.to_str().unwrap()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

const PROMPT_PLAN: &str = r#"
[plan]
name = "extra-axis"

[endpoints.s]
base_url = "sim://extra"

[models.m]
served_name = "m"

[datasets.p]
kind = "prompt"
text = "hello there"
"#;

#[test]
fn an_extra_axis_merges_each_value_into_defaults_extra() {
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "{PROMPT_PLAN}
[defaults]
extra = {{ chat_template_kwargs = {{ enable_thinking = false, keep = 1 }}, priority = 0 }}

[matrix]
extra = [{{ chat_template_kwargs = {{ enable_thinking = true }} }}, {{ priority = 5 }}]
load = {{ concurrency = 1, requests = 2, warmup = 1 }}
"
    );
    let runs = expand_json(dir.path(), &plan);
    assert_eq!(runs.len(), 2);
    assert_ne!(runs[0]["id"], runs[1]["id"]);
    assert_eq!(
        runs[0]["axes"]["extra"],
        json!({"chat_template_kwargs": {"enable_thinking": true}})
    );
    assert_eq!(
        runs[0]["settings"]["request"]["extra"],
        json!({"chat_template_kwargs": {"enable_thinking": true, "keep": 1}, "priority": 0})
    );
    assert_eq!(
        runs[1]["settings"]["request"]["extra"],
        json!({"chat_template_kwargs": {"enable_thinking": false, "keep": 1}, "priority": 5})
    );
    // The table shows each value flattened; --only selects by it.
    let path = dir.path().join("expand.toml");
    let o = perfplan(&["expand", path.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("chat_template_kwargs=enable_thinking=true"),
        "{table}"
    );
    assert!(table.contains("priority=5"), "{table}");
    let o = perfplan(&[
        "expand",
        path.to_str().unwrap(),
        "--json",
        "--only",
        "extra=priority=5",
    ]);
    let only: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(only.as_array().unwrap().len(), 1);
    assert_eq!(only[0]["id"], runs[1]["id"]);
}

#[test]
fn extra_axis_values_must_be_tables() {
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "{PROMPT_PLAN}
[matrix]
extra = [1, {{ priority = 5 }}]
load = {{ concurrency = 1, requests = 2, warmup = 1 }}
"
    );
    let (ok, text) = validate(dir.path(), &plan);
    assert!(!ok);
    assert!(
        text.contains("expected a table in `matrix.extra[0]`"),
        "{text}"
    );
    assert!(text.contains("validate.toml:16:10"), "{text}");
    // TOML's dotted key makes one table holding a list: one run, with a warning.
    let plan = format!(
        "{PROMPT_PLAN}
[matrix]
extra.priority = [0, 5]
load = {{ concurrency = 1, requests = 2, warmup = 1 }}
"
    );
    let (ok, text) = validate(dir.path(), &plan);
    assert!(ok, "{text}");
    assert!(
        text.contains("`extra` in [matrix] is a single table"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_carry_the_extra_axis_value_of_their_run() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
[datasets.p]
kind = "prompt"
text = "hello there"

[defaults]
output_tokens = 4
extra = { chat_template_kwargs = { keep = 1 } }

[matrix]
extra = [{ chat_template_kwargs = { enable_thinking = true } }, { chat_template_kwargs = { enable_thinking = false }, priority = 3 }]
load = { concurrency = 1, requests = 3, warmup = 1 }
"#;
    let (received, db) = run_against_sim(dir.path(), body, "/v1/chat/completions").await;
    assert_eq!(received.len(), 8);
    let thinking: Vec<_> = received
        .iter()
        .map(|r| {
            assert_eq!(r.body["chat_template_kwargs"]["keep"], json!(1));
            (
                r.body["chat_template_kwargs"]["enable_thinking"].clone(),
                r.body.get("priority").cloned(),
            )
        })
        .collect();
    assert!(thinking[..4].iter().all(|t| *t == (json!(true), None)));
    assert!(thinking[4..]
        .iter()
        .all(|t| *t == (json!(false), Some(json!(3)))));
    assert_eq!(report_json(&db).len(), 2);
}

/// With `n = 2` the simulator streams both choices' chunks; only choice 0's are timed,
/// while usage counts every choice's tokens. Validation says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_choices_time_choice_zero_and_count_all_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
[datasets.p]
kind = "prompt"
text = "hello there"

[defaults]
output_tokens = 8
ignore_eos = true
n = 2

[matrix]
api = ["chat", "completions"]
load = { concurrency = 2, requests = 4, warmup = 2 }
"#;
    let (received, db) = run_against_sim(dir.path(), body, "/v1/chat/completions").await;
    assert_eq!(received.len(), 6);
    assert!(received.iter().all(|r| r.body["n"] == json!(2)));
    let rows: Vec<Vec<Option<i64>>> =
        query(&db, "SELECT chunk_count, completion_tokens FROM requests");
    assert_eq!(rows.len(), 12);
    for row in rows {
        assert_eq!(row[0], Some(8), "content chunks of choice 0 only");
        assert_eq!(row[1], Some(16), "usage counts both choices");
    }
    let (ok, text) = validate(
        dir.path(),
        &std::fs::read_to_string(dir.path().join("plan.toml")).unwrap(),
    );
    assert!(ok, "{text}");
    assert!(
        text.contains("`n = 2`: TTFT and inter-token times follow choice 0 only"),
        "{text}"
    );
}

/// `query_tokens` and `text_tokens` take `{min, max}` like `input_tokens`: every request
/// draws its own length within the bounds (a plain number still works, see traffic.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerank_query_and_image_text_lengths_take_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"
[datasets.rr]
kind = "random_rerank"
query_tokens = { min = 4, max = 12 }
num_documents = 2

[datasets.img]
kind = "random_images"
width = 8
height = 8
text_tokens = { min = 3, max = 9 }

[defaults]
output_tokens = 2

[matrix]
dataset = ["rr", "img"]
api = ["rerank", "chat"]
load = { concurrency = 2, requests = 16, warmup = 2 }
exclude = [{ dataset = "rr", api = "chat" }, { dataset = "img", api = "rerank" }]
"#;
    let (_, db) = run_against_sim(dir.path(), body, "/v1/rerank").await;
    let runs = report_json(&db);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let id = run["id"].as_str().unwrap();
        let rows: Vec<Vec<Option<i64>>> = query(
            &db,
            &format!("SELECT target_input_tokens, client_input_tokens FROM requests WHERE run_id = '{id}'"),
        );
        assert_eq!(rows.len(), 18);
        let mut lengths: Vec<i64> = rows.iter().map(|r| r[1].unwrap()).collect();
        if run["axes"]["dataset"] == json!("rr") {
            // The query and two documents of the query's length (ratio 1), exactly.
            for r in &rows {
                let target = r[0].unwrap();
                assert_eq!(r[1], Some(target));
                assert!(target % 3 == 0 && (12..=36).contains(&target), "{target}");
            }
        } else {
            assert!(lengths.iter().all(|n| (3..=9).contains(n)), "{lengths:?}");
        }
        lengths.sort_unstable();
        lengths.dedup();
        assert!(lengths.len() >= 3, "lengths vary per request: {lengths:?}");
    }
}

#[test]
fn query_and_text_token_ranges_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let plan = r#"
[plan]
name = "ranges"
[endpoints.s]
base_url = "sim://ranges"
api = "rerank"
[models.m]
served_name = "m"
[datasets.rr]
kind = "random_rerank"
query_tokens = { min = 9, max = 4 }
[matrix]
load = { concurrency = 1, requests = 2, warmup = 1 }
"#;
    let (ok, text) = validate(dir.path(), plan);
    assert!(!ok);
    assert!(text.contains("query_tokens min 9 is above max 4"), "{text}");
    assert!(text.contains("validate.toml:11:1"), "{text}");
    let (ok, text) = validate(
        dir.path(),
        &plan.replace("{ min = 9, max = 4 }", "{ min = 4 }"),
    );
    assert!(!ok, "{text}");
    assert!(text.contains("query_tokens"), "{text}");
}

const CHAT_TEMPLATE: &str = r#"{"model": {{ model | tojson }}, "messages": {{ messages | tojson }},
 "max_tokens": {{ max_tokens }}, "stream": {{ stream | tojson }},
 "stream_options": {"include_usage": true}, "custom": "from-file"}"#;

/// `body_template = "@file"` is read relative to the plan and builds every body, the
/// turns of a multi-turn run included (their messages carry the real earlier answers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_template_file_builds_single_and_multi_turn_bodies() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tmpl")).unwrap();
    std::fs::write(dir.path().join("tmpl/body.json"), CHAT_TEMPLATE).unwrap();
    let body = r#"
[datasets.p]
kind = "prompt"
text = "hello there"

[datasets.chat]
kind = "random_multi_turn"
turns = 2
user_tokens = 8
assistant_tokens = 4

[defaults]
output_tokens = 4
ignore_eos = true
body_template = "@tmpl/body.json"

[matrix]
dataset = ["p", "chat"]
load = { concurrency = 2, requests = 4, warmup = 2 }
"#;
    let (received, db) = run_against_sim(dir.path(), body, "/v1/chat/completions").await;
    assert_eq!(received.len(), 12);
    for r in &received {
        assert_eq!(r.body["custom"], json!("from-file"), "{}", r.body);
        assert_eq!(r.body["max_tokens"], json!(4));
        assert!(
            r.body.get("ignore_eos").is_none(),
            "only what the template writes"
        );
    }
    let later = received[6..]
        .iter()
        .filter(|r| r.body["messages"].as_array().unwrap().len() == 3)
        .count();
    assert!(later >= 2, "later turns carry user, answer, user");
    assert_eq!(report_json(&db).len(), 2);
}

#[test]
fn body_template_files_are_checked_at_validation() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |template: &str| {
        format!(
            "{PROMPT_PLAN}
[defaults]
output_tokens = 4
body_template = \"{template}\"

[matrix]
load = {{ concurrency = 1, requests = 2, warmup = 1 }}
"
        )
    };
    let (ok, text) = validate(dir.path(), &plan("@nope.json"));
    assert!(!ok);
    assert!(
        text.contains("template file `nope.json` does not exist"),
        "{text}"
    );
    assert!(text.contains("validate.toml:17:17"), "{text}");
    std::fs::write(dir.path().join("bad.json"), "{\"model\": {{ model }}}").unwrap();
    let (ok, text) = validate(dir.path(), &plan("@bad.json"));
    assert!(!ok);
    assert!(
        text.contains("`body_template` cannot make a request body"),
        "{text}"
    );
    assert!(text.contains("not JSON"), "{text}");
    assert!(text.contains("validate.toml:17:"), "{text}");
    std::fs::write(dir.path().join("good.json"), CHAT_TEMPLATE).unwrap();
    let (ok, text) = validate(dir.path(), &plan("@good.json"));
    assert!(ok, "{text}");
}
