//! Resume semantics of the results database under a real `kill -9`: a child process
//! (this test binary, re-run in child mode) finishes one run and is killed while it
//! writes the next. Every committed batch survives, the finished run is intact, the
//! killed run reads as interrupted and `begin_run` wipes it for a rerun from scratch.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use perfplan::record::{Outcome, Phase, RequestRecord, Usage};
use perfplan::store::{RunFinish, RunRow, RunStatus, Store, StoredRequest, SuiteInfo};
use serde_json::json;

const CHILD_ENV: &str = "PERFPLAN_STORE_CHILD_DIR";
const BATCH: u64 = 10;

fn record(index: u64) -> RequestRecord {
    let sent = Duration::from_millis(index);
    RequestRecord {
        index,
        item: index,
        phase: Phase::Measured,
        intended: sent,
        sent,
        connect: None,
        tls: None,
        first_chunk: Some(sent + Duration::from_millis(5)),
        content_times: vec![
            sent + Duration::from_millis(5),
            sent + Duration::from_millis(9),
        ],
        end: sent + Duration::from_millis(10),
        outcome: Outcome::Ok,
        http_status: Some(200),
        error: None,
        finish_reason: Some("stop".into()),
        usage: Usage {
            prompt_tokens: Some(10),
            completion_tokens: Some(2),
            cached_tokens: None,
            reasoning_tokens: None,
        },
        output_text: "ab".into(),
        reasoning_text: String::new(),
        client_reasoning_tokens: None,
        stream_tokens: None,
        output_bytes: None,
        client_output_tokens: Some(2),
        client_input_tokens: Some(10),
        last_chunk: None,
        first_answer: None,
        request_bytes: 100,
        response_bytes: 200,
        raw: Vec::new(),
        replica: None,
        class: None,
        read_clock: None,
        answer: None,
        content_delays: Vec::new(),
        tools: None,
        tool_calls: Vec::new(),
        unstreamed: false,
    }
}

fn write_batch(store: &mut Store, run: &str, from: u64) {
    let recs: Vec<RequestRecord> = (from..from + BATCH).map(record).collect();
    let batch: Vec<StoredRequest<'_>> = recs
        .iter()
        .map(|r| StoredRequest {
            record: r,
            target_input_tokens: Some(10),
        })
        .collect();
    store.write_requests(run, &batch).unwrap();
}

fn runs() -> Vec<RunRow> {
    ["first", "second", "third"]
        .iter()
        .enumerate()
        .map(|(i, id)| RunRow {
            id: (*id).into(),
            ordinal: i as u32,
            axes: json!({"n": i}),
            settings: json!({}),
        })
        .collect()
}

/// Child mode: finish `first` with 50 requests, then write `second` until killed.
fn child(dir: &Path) {
    let mut store = Store::create(dir, &SuiteInfo::new("kill", "[plan]")).unwrap();
    store.register_runs(&runs()).unwrap();
    store.begin_run("first").unwrap();
    for k in 0..5 {
        write_batch(&mut store, "first", k * BATCH);
    }
    let metrics = BTreeMap::from([("requests_ok".to_string(), Some(50.0))]);
    store
        .finish_run(
            "first",
            &RunFinish {
                status: RunStatus::Done,
                metrics: &metrics,
                facts: &perfplan::record::RunFacts::default(),
                warnings: &[],
                error: None,
                verdict: None,
            },
        )
        .unwrap();
    store.begin_run("second").unwrap();
    let start = Instant::now();
    let mut next = 0;
    while start.elapsed() < Duration::from_secs(60) {
        write_batch(&mut store, "second", next);
        next += BATCH;
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn kill_9_loses_at_most_the_batch_in_flight() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&dir));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill_9_loses_at_most_the_batch_in_flight",
            "--nocapture",
        ])
        .env(CHILD_ENV, tmp.path())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            Instant::now() < deadline,
            "child never wrote the second run"
        );
        let count = Store::open(tmp.path())
            .ok()
            .and_then(|s| s.request_count("second").ok())
            .unwrap_or(0);
        if count >= 5 * BATCH {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    proc.kill().unwrap(); // SIGKILL
    proc.wait().unwrap();

    let mut store = Store::open_resume(tmp.path()).unwrap();
    assert_eq!(store.run_status("first").unwrap(), RunStatus::Done);
    assert_eq!(store.run_status("second").unwrap(), RunStatus::Interrupted);
    assert_eq!(store.run_status("third").unwrap(), RunStatus::Pending);
    assert_eq!(store.request_count("first").unwrap(), 50);
    let kept = store.request_count("second").unwrap();
    assert!(
        kept >= 5 * BATCH && kept % BATCH == 0,
        "whole batches only: {kept}"
    );
    let rows = store.request_rows("second").unwrap();
    assert!(
        rows.iter().enumerate().all(|(i, r)| r.index == i as u64),
        "no gap in committed rows"
    );

    store.register_runs(&runs()).unwrap();
    assert!(
        store.begin_run("first").is_err(),
        "a finished run is never rerun"
    );
    store.begin_run("second").unwrap();
    assert_eq!(store.request_count("second").unwrap(), 0);
    assert_eq!(store.request_count("first").unwrap(), 50);
    assert_eq!(store.runs().unwrap()[0].metrics["requests_ok"], Some(50.0));
}
