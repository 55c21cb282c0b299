//! `kind = "tool_calls"` against the simulator over real HTTP on 127.0.0.1: the tool loop
//! sends the tool results back and continues each turn for up to `max_tool_rounds`
//! rounds; the parse ratio perfplan stores equals the simulator's truth (with a share
//! of malformed calls); round TTFTs are stored; a bad tools file or key is a located
//! error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;
use std::time::Duration;

use cli_support::{perfplan, query, report_json, run};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::Value;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn sim_config(rate: f64, bad: f64, parallel: u32) -> SimConfig {
    SimConfig {
        models: vec!["m".into()],
        ttft_base: HumanDuration(Duration::from_millis(2)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        tool_call_rate: rate,
        fault_tool_arguments: bad,
        tool_calls_per_answer: parallel,
        seed: 7,
        ..SimConfig::default()
    }
}

fn plan(base_url: &str, dataset_extra: &str, load: &str) -> String {
    format!(
        "[plan]\nname = \"tools\"\nseed = 3\n[endpoints.s]\nbase_url = \"{base_url}\"\n\
         [models.m]\n[datasets.t]\nkind = \"tool_calls\"\nturns = 2\nuser_tokens = 12\n\
         assistant_tokens = 16\n{dataset_extra}\n[defaults]\nignore_eos = true\n\
         [matrix]\nload = {load}\n"
    )
}

/// (tool_round, tool_calls, tool_calls_parsed, ttft_us) of the measured rows.
/// Writes `text` as `dir/plan.toml`, runs it into `dir/out` and returns the database.
fn run_plan(dir: &Path, text: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("plan.toml"), text).unwrap();
    run(&dir.join("plan.toml"), &dir.join("out"))
}

fn tool_rows(db: &Path) -> Vec<(i64, i64, i64, Option<i64>)> {
    query::<i64>(
        db,
        "SELECT tool_round, tool_calls, tool_calls_parsed, ttft_us FROM requests \
         WHERE phase = 'measured' ORDER BY request_index",
    )
    .into_iter()
    .map(|r| (r[0].unwrap(), r[1].unwrap(), r[2].unwrap(), r[3]))
    .collect()
}

#[test]
fn the_loop_answers_every_call_and_the_parse_ratio_is_the_simulators_truth() {
    let rt = runtime();
    let sim = rt
        .block_on(SimServer::start(sim_config(0.6, 0.3, 2)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = plan(
        &sim.base_url(),
        "max_tool_rounds = 2\ntool_result_tokens = 20",
        "{ concurrency = 3, requests = 40 }",
    );
    let db = run_plan(dir.path(), &text);

    // Every request the simulator saw offered the tools; every tool message answered
    // the call before it (the simulator answers 400 otherwise, and the run has none).
    let received = sim.received();
    let chat: Vec<&Value> = received
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| &r.body)
        .collect();
    assert_eq!(chat.len(), 40);
    assert!(chat
        .iter()
        .all(|b| b["tools"].as_array().unwrap().len() == 3));
    let tool_messages = chat
        .iter()
        .flat_map(|b| b["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "tool")
        .count();
    assert!(tool_messages > 0, "no tool result was ever sent");

    let truth = sim.truth();
    assert!(truth.iter().all(|t| t.status == 200), "{truth:?}");
    let calls: u64 = truth.iter().map(|t| u64::from(t.tool_calls)).sum();
    let bad: u64 = truth
        .iter()
        .map(|t| u64::from(t.tool_calls_malformed))
        .sum();
    assert!(calls > 10 && bad > 0, "calls {calls}, malformed {bad}");

    let rows = tool_rows(&db);
    assert_eq!(rows.len(), 40);
    let stored_calls: i64 = rows.iter().map(|r| r.1).sum();
    let stored_parsed: i64 = rows.iter().map(|r| r.2).sum();
    assert_eq!(stored_calls as u64, calls);
    assert_eq!((stored_calls - stored_parsed) as u64, bad);
    // Rounds go up to max_tool_rounds, and every round's TTFT is stored.
    assert!(rows.iter().any(|r| r.0 == 1), "{rows:?}");
    assert!(rows.iter().all(|r| r.0 <= 2 && r.3.is_some()), "{rows:?}");

    let runs = report_json(&db);
    let m = &runs[0]["metrics"];
    let ratio = m["tool_call_parse_ok_ratio"].as_f64().unwrap();
    assert!((ratio - (calls - bad) as f64 / calls as f64).abs() < 1e-12);
    assert_eq!(m["tool_calls_unparsed"].as_f64().unwrap() as u64, bad);
    let turns = rows.iter().filter(|r| r.0 == 0).count() as f64;
    let per_turn = m["tool_calls_per_turn"].as_f64().unwrap();
    assert!((per_turn - calls as f64 / turns).abs() < 1e-12);
    assert!(m["ttft_user_round_mean"].as_f64().unwrap() > 0.0);
    assert!(m["ttft_tool_round_mean"].as_f64().unwrap() > 0.0);
    assert!(m["ttft_tool_round_p99"].as_f64().unwrap() > 0.0);
    rt.block_on(sim.shutdown());
}

#[test]
fn tool_rounds_stop_at_max_tool_rounds_and_results_come_from_the_file() {
    let rt = runtime();
    let sim = rt
        .block_on(SimServer::start(sim_config(1.0, 0.0, 1)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tools.json"),
        r#"[{"type": "function", "function": {"name": "lookup", "description": "d",
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}},
            "required": ["id"]}}, "result": "FOUND-IT"}]"#,
    )
    .unwrap();
    let text = plan(
        &sim.base_url(),
        "max_tool_rounds = 1\ntools = \"tools.json\"",
        "{ concurrency = 1, requests = 4 }",
    );
    let db = run_plan(dir.path(), &text);
    // Every answer is a call: each of the 2 turns is its user round and one tool round.
    let rows = tool_rows(&db);
    let rounds: Vec<i64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(rounds, [0, 1, 0, 1]);
    assert!(rows.iter().all(|r| r.1 == 1 && r.2 == 1), "{rows:?}");
    let received = sim.received();
    let last = &received.last().unwrap().body;
    let messages = last["messages"].as_array().unwrap();
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 3, "{messages:?}");
    assert!(results.iter().all(|m| m["content"] == "FOUND-IT"));
    assert_eq!(last["tools"][0]["function"]["name"], "lookup");
    let m = &report_json(&db)[0]["metrics"];
    assert_eq!(m["tool_call_parse_ok_ratio"].as_f64(), Some(1.0));
    assert_eq!(m["tool_calls_per_turn"].as_f64(), Some(2.0));
    rt.block_on(sim.shutdown());
}

#[test]
fn a_bad_tools_file_and_a_misspelt_key_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tools.json"),
        r#"[{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "strng"}}}}]"#,
    )
    .unwrap();
    let text = plan(
        "sim://t",
        "tools = \"tools.json\"",
        "{ concurrency = 1, requests = 2 }",
    );
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, &text).unwrap();
    let out = perfplan(&["validate", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("tools.json"), "{err}");
    assert!(
        err.contains("unknown type \"strng\" (did you mean `string`?)"),
        "{err}"
    );

    let typo = text.replace("tools = ", "max_tool_round = 2\ntools = ");
    std::fs::write(&path, typo).unwrap();
    let out = perfplan(&["validate", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("max_tool_rounds"), "{err}");
    assert!(err.contains("plan.toml:"), "{err}");

    let wrong_kind = text.replace("kind = \"tool_calls\"", "kind = \"random_multi_turn\"");
    std::fs::write(&path, wrong_kind).unwrap();
    let out = perfplan(&["validate", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("`tools` does not apply to kind `random_multi_turn`")
            && err.contains("plan.toml:12:1"),
        "{err}"
    );
}

#[test]
fn the_responses_api_sends_function_call_items_back() {
    let rt = runtime();
    let sim = rt
        .block_on(SimServer::start(sim_config(0.7, 0.25, 2)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = plan(
        &sim.base_url(),
        "max_tool_rounds = 2",
        "{ concurrency = 2, requests = 24 }\napi = \"responses\"",
    );
    let db = run_plan(dir.path(), &text);
    let received = sim.received();
    let bodies: Vec<&Value> = received
        .iter()
        .filter(|r| r.path.ends_with("/responses"))
        .map(|r| &r.body)
        .collect();
    assert_eq!(bodies.len(), 24);
    // The tools in the Responses API's flat shape; results as function_call_output items.
    assert!(bodies
        .iter()
        .all(|b| b["tools"][0]["name"] == "get_weather"));
    let outputs = bodies
        .iter()
        .flat_map(|b| b["input"].as_array().unwrap().iter())
        .filter(|i| i["type"] == "function_call_output")
        .count();
    assert!(outputs > 0);
    let truth = sim.truth();
    assert!(truth.iter().all(|t| t.status == 200), "{truth:?}");
    let calls: u64 = truth.iter().map(|t| u64::from(t.tool_calls)).sum();
    let bad: u64 = truth
        .iter()
        .map(|t| u64::from(t.tool_calls_malformed))
        .sum();
    let rows = tool_rows(&db);
    let stored: i64 = rows.iter().map(|r| r.1).sum();
    let parsed: i64 = rows.iter().map(|r| r.2).sum();
    assert!(calls > 0 && bad > 0, "calls {calls}, malformed {bad}");
    assert_eq!((stored as u64, (stored - parsed) as u64), (calls, bad));
    assert!(rows.iter().any(|r| r.0 > 0) && rows.iter().all(|r| r.3.is_some()));
    rt.block_on(sim.shutdown());
}

#[test]
fn the_simulator_refuses_tool_results_that_answer_no_call() {
    let rt = runtime();
    let sim = rt
        .block_on(SimServer::start(sim_config(1.0, 0.0, 1)))
        .unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let body = serde_json::json!({"model": "m", "max_tokens": 4, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "3"}]});
    let (status, answer) = rt.block_on(async {
        let r = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (
            status,
            serde_json::from_str::<Value>(&r.text().await.unwrap()).unwrap(),
        )
    });
    assert_eq!(status, 400);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`call_2`"),
        "{answer}"
    );
    rt.block_on(sim.shutdown());
}

#[test]
fn with_the_models_tokenizer_every_round_is_counted_and_tokens_are_conserved() {
    let rt = runtime();
    let tokenizer = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    let cfg = SimConfig {
        tokenizer: Some(tokenizer.to_string_lossy().into_owned()),
        ..sim_config(0.8, 0.0, 2)
    };
    let sim = rt.block_on(SimServer::start(cfg)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = plan(
        &sim.base_url(),
        "max_tool_rounds = 2\ntool_result_tokens = 24",
        "{ concurrency = 2, requests = 16 }\napi = [\"chat\", \"responses\"]",
    )
    .replace(
        "[models.m]\n",
        &format!(
            "[models.m]\ntokenizer = {:?}\n",
            tokenizer.to_string_lossy()
        ),
    );
    let db = run_plan(dir.path(), &text);
    let rows = query::<i64>(
        &db,
        "SELECT r.ordinal, q.tool_round, q.prompt_tokens, q.client_input_tokens FROM requests q \
         JOIN runs r ON r.id = q.run_id WHERE q.phase = 'measured' ORDER BY r.ordinal, q.request_index",
    );
    assert_eq!(rows.len(), 32);
    assert!(rows.iter().any(|r| r[1] > Some(0)), "{rows:?}");
    // Every round's input is counted client-side (Responses items as chat messages);
    // on chat the simulator, with the same tokenizer and template, counts the same.
    assert!(rows.iter().all(|r| r[3].is_some()), "{rows:?}");
    for r in rows.iter().filter(|r| r[0] == Some(1)) {
        assert_eq!(r[2], r[3], "{rows:?}");
    }
    for run in report_json(&db) {
        let warnings = run["warnings"].to_string();
        assert!(!warnings.contains("tokens_not_conserved"), "{warnings}");
    }
    rt.block_on(sim.shutdown());
}
