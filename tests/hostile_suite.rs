//! A whole suite through the CLI against the hostile server: one run per route (4
//! requests, 2 at a time). Every broken response must end in its class with the server's
//! message, every valid-but-odd one must be a success with the right token counts (the
//! server's usage, or the client's tokenizer count when there is none, multi-turn turns
//! included), no panic, requests the server saw = rows stored = report totals, and the
//! perfplan process's peak memory bounded although some routes never stop sending.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
mod hostile_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hostile_support::{Expect, HostileServer, Route, Tokens};
use perfplan::tokenize::Tokenizer;
use serde_json::Value;

const REQUESTS: u64 = 4;
/// Peak resident memory allowed for the perfplan process (a debug build), MiB.
const PEAK_MIB: u64 = 200;

fn fixture_tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

/// One endpoint per route; runs over every route (a multi-turn route on its own dataset).
fn plan(server: &HostileServer, routes: &[Route]) -> String {
    let mut text = format!(
        "[plan]\nname = \"hostile\"\nseed = 3\n\n[models.m]\ntokenizer = \"{}\"\n\n\
         [datasets.p]\nkind = \"prompt\"\ntext = \"Say hi.\"\n\n\
         [datasets.conv]\nkind = \"random_multi_turn\"\nturns = 3\nuser_tokens = 12\n\n\
         [datasets.trace]\nkind = \"trace\"\npath = \"trace.jsonl\"\n\n\
         [defaults]\noutput_tokens = 16\n\n\
         # The routes answer in one write: what this suite checks is parsing, not streaming.\n\
         [trust]\nburst_share = 1.0\n\n",
        fixture_tokenizer().display()
    );
    for r in routes {
        text.push_str(&format!(
            "[endpoints.{}]\nbase_url = \"{}\"\ntimeouts = {{ read = \"5s\", total = \"20s\" }}\n{}\n\n",
            r.name,
            server.url(r.name),
            r.endpoint
        ));
    }
    let axis: Vec<String> = routes
        .iter()
        .filter(|r| !r.run.contains("dataset"))
        .map(|r| format!("\"{}\"", r.name))
        .collect();
    let load = format!("{{ concurrency = 2, requests = {REQUESTS} }}");
    // An entry for a route outside the axis is a run of its own: it needs its load.
    let include: Vec<String> = routes
        .iter()
        .filter(|r| !r.run.is_empty())
        .map(|r| match r.run.contains("dataset") {
            true => format!("{{ endpoint = \"{}\", {}, load = {load} }}", r.name, r.run),
            false => format!("{{ endpoint = \"{}\", {} }}", r.name, r.run),
        })
        .collect();
    text.push_str(&format!(
        "[matrix]\nendpoint = [{}]\ndataset = [\"p\"]\nload = {load}\ninclude = [{}]\n",
        axis.join(", "),
        include.join(", ")
    ));
    text
}

/// Runs the suite, sampling the child's peak RSS (`VmHWM`, Linux) until it exits.
fn run_measured(plan: &Path, out: &Path) -> (std::process::ExitStatus, String, Option<u64>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let (mut peak_kib, started) = (None, Instant::now());
    let status = loop {
        if let Some(kib) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| vm_hwm_kib(&s))
        {
            peak_kib = Some(peak_kib.unwrap_or(0).max(kib));
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("the hostile suite did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr, peak_kib.map(|k| k / 1024))
}

fn vm_hwm_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn metric(run: &Value, name: &str) -> Option<f64> {
    run["metrics"][name].as_f64()
}

/// The output tokens a success must report: usage, or the tokenizer's count.
fn expected_output(tokens: Tokens, tok: &Tokenizer) -> f64 {
    match tokens {
        Tokens::Usage(n) => f64::from(n),
        Tokens::Client(text) => tok.count(text, false).unwrap() as f64,
    }
}

fn check_run(route: &Route, run: &Value, tok: &Tokenizer, db: &Path) {
    let name = route.name;
    let total = metric(run, "requests_ok").unwrap() + metric(run, "requests_failed").unwrap();
    assert_eq!(total, REQUESTS as f64, "{name}: report totals");
    match route.expect {
        Expect::Ok(tokens) => {
            assert_eq!(run["status"], "done", "{name}: {run}");
            assert_eq!(
                metric(run, "requests_ok"),
                Some(REQUESTS as f64),
                "{name}: {run}"
            );
            let want = expected_output(tokens, tok);
            assert_eq!(
                metric(run, "output_tokens_mean"),
                Some(want),
                "{name}: {run}"
            );
            assert_eq!(metric(run, "output_tokens_max"), Some(want), "{name}");
            if want > 0.0 && route.run != "stream = false" {
                assert!(metric(run, "ttft_p50").is_some(), "{name}: no TTFT: {run}");
                assert!(metric(run, "ttfo_p50").is_some(), "{name}: no TTFO: {run}");
            }
            let estimated = matches!(tokens, Tokens::Client(_));
            let warned = run["warnings"]
                .to_string()
                .contains("client's tokenizer estimates");
            assert_eq!(warned, estimated, "{name}: {}", run["warnings"]);
        }
        Expect::Fails { class, error } => {
            assert_eq!(run["failures"][class], REQUESTS, "{name}: {run}");
            assert_eq!(run["status"], "failed", "{name}: every request failed");
            let errors: Vec<Vec<Option<String>>> = cli_support::query(
                db,
                &format!(
                    "SELECT error FROM requests WHERE run_id = '{}'",
                    run["id"].as_str().unwrap()
                ),
            );
            for e in errors {
                let text = e[0].clone().unwrap_or_default();
                assert!(
                    text.contains(error),
                    "{name}: stored error {text:?} lacks {error:?}"
                );
            }
        }
    }
}

/// Recorded requests without usage (`stream_options` not asked for): one user message each.
fn trace_file() -> String {
    let mut text = String::new();
    for (i, q) in [
        "What is Rust?",
        "Name three rivers of France.",
        "Hi",
        "Write a haiku about memory.",
    ]
    .iter()
    .enumerate()
    {
        let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": q}], "max_tokens": 16, "stream": true});
        // Epoch seconds: a trace's times are instants, after 1970 (a zero is refused).
        let at = 1_700_000_000.0 + i as f64 * 0.01;
        text.push_str(&serde_json::json!({"body": body, "timestamp": at}).to_string());
        text.push('\n');
    }
    text
}

/// Each request's input, counted client-side, is its prompt as the server received it: a
/// multi-turn turn's whole history, a recorded body's messages.
fn check_client_inputs(
    server: &HostileServer,
    route: &str,
    run: &Value,
    tok: &Tokenizer,
    db: &Path,
) {
    let mut sent: Vec<u32> = server
        .bodies(route)
        .iter()
        .map(|b| {
            let body: Value = serde_json::from_slice(b).unwrap();
            tok.count_chat(body["messages"].as_array().unwrap())
                .unwrap() as u32
        })
        .collect();
    let id = run["id"].as_str().unwrap();
    let rows: Vec<Vec<Option<u32>>> = cli_support::query(
        db,
        &format!("SELECT client_input_tokens FROM requests WHERE run_id = '{id}'"),
    );
    let mut stored: Vec<u32> = rows
        .iter()
        .map(|r| r[0].expect("a client input count"))
        .collect();
    sent.sort_unstable();
    stored.sort_unstable();
    assert_eq!(stored, sent, "multi-turn inputs as the server saw them");
    assert!(
        sent.windows(2).any(|w| w[0] < w[1]),
        "later turns are longer: {sent:?}"
    );
    assert!(metric(run, "input_tokens_mean").is_some());
}

#[test]
fn a_hostile_suite_ends_every_response_in_its_class() {
    let server = HostileServer::start();
    let routes = hostile_support::routes();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("hostile.toml");
    std::fs::write(&plan_path, plan(&server, &routes)).unwrap();
    std::fs::write(dir.path().join("trace.jsonl"), trace_file()).unwrap();
    let out = dir.path().join("out");
    let (status, stderr, peak_mib) = run_measured(&plan_path, &out);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("`n = 2`: TTFT and inter-token times follow choice 0 only"),
        "{stderr}"
    );
    // Runs where every request failed are failed runs: exit code 4.
    assert_eq!(status.code(), Some(4), "{stderr}");
    let db = out.join("results.db");
    let runs = cli_support::report_json(&db);
    assert_eq!(runs.len(), routes.len());
    let tok = Tokenizer::load(&fixture_tokenizer()).unwrap();
    for route in &routes {
        let run = runs
            .iter()
            .find(|r| r["axes"]["endpoint"] == route.name)
            .unwrap_or_else(|| panic!("no run for {}", route.name));
        assert_eq!(
            server.seen(route.name),
            REQUESTS,
            "{}: requests the server saw",
            route.name
        );
        let id = run["id"].as_str().unwrap();
        let rows: Vec<Vec<Option<i64>>> = cli_support::query(
            &db,
            &format!("SELECT COUNT(*) FROM requests WHERE run_id = '{id}'"),
        );
        assert_eq!(
            rows[0][0],
            Some(REQUESTS as i64),
            "{}: rows stored",
            route.name
        );
        check_run(route, run, &tok, &db);
        if route.run.contains("dataset") {
            check_client_inputs(&server, route.name, run, &tok, &db);
        }
    }
    let by_name = |n: &str| runs.iter().find(|r| r["axes"]["endpoint"] == n).unwrap();
    let empty = by_name("empty_output");
    assert_eq!(metric(empty, "requests_no_output"), Some(REQUESTS as f64));
    assert!(
        empty["warnings"].to_string().contains("no output at all"),
        "{empty}"
    );
    assert_eq!(metric(by_name("content"), "requests_no_output"), Some(0.0));
    let thinking = by_name("reasoning_content");
    let (ttft, ttfo) = (
        metric(thinking, "ttft_p50").unwrap(),
        metric(thinking, "ttfo_p50").unwrap(),
    );
    assert!(
        ttfo >= ttft + 85.0,
        "three 30 ms pauses between reasoning and answer: {ttft} {ttfo}"
    );
    if let Some(peak) = peak_mib {
        eprintln!("hostile suite: peak RSS of perfplan {peak} MiB");
        assert!(peak < PEAK_MIB, "peak RSS {peak} MiB");
    }
}
