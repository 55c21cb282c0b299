//! How fast the store takes request rows (ignored by default; run with
//! `cargo test --test store_throughput -- --ignored --nocapture`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use perfplan::engine::{Outcome, Phase, RequestRecord, Usage};
use perfplan::store::{RunRow, Store, StoredRequest, SuiteInfo};
use serde_json::json;

const REQUESTS: u64 = 20_000;
const CHUNKS: u64 = 64;
const BATCH: usize = 256;

fn record(index: u64) -> RequestRecord {
    let sent = Duration::from_millis(index);
    let content_times: Vec<Duration> = (0..CHUNKS)
        .map(|k| sent + Duration::from_millis(20 + k))
        .collect();
    RequestRecord {
        index,
        item: index,
        phase: Phase::Measured,
        intended: sent,
        sent,
        connect: None,
        first_chunk: content_times.first().copied(),
        end: *content_times.last().unwrap(),
        content_times,
        outcome: Outcome::Ok,
        http_status: Some(200),
        error: None,
        finish_reason: Some("length".into()),
        usage: Usage {
            prompt_tokens: Some(1024),
            completion_tokens: Some(CHUNKS as u32),
            cached_tokens: Some(512),
        },
        output_text: String::new(),
        client_output_tokens: None,
        client_input_tokens: None,
        last_chunk: None,
        request_bytes: 5000,
        response_bytes: 20_000,
        raw: Vec::new(),
    }
}

#[test]
#[ignore = "measurement, not a check"]
fn write_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), &SuiteInfo::new("bench", "")).unwrap();
    store
        .register_runs(&[RunRow {
            id: "r".into(),
            ordinal: 0,
            axes: json!({}),
            settings: json!({}),
        }])
        .unwrap();
    store.begin_run("r").unwrap();
    let records: Vec<RequestRecord> = (0..REQUESTS).map(record).collect();
    for keep in [true, false] {
        store.set_keep_chunks(keep);
        let start = Instant::now();
        for chunk in records.chunks(BATCH) {
            let batch: Vec<StoredRequest<'_>> = chunk
                .iter()
                .map(|r| StoredRequest {
                    record: r,
                    target_input_tokens: None,
                    client_input_tokens: None,
                })
                .collect();
            store.write_requests("r", &batch).unwrap();
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "keep_chunks={keep}: {REQUESTS} requests × {CHUNKS} chunks in batches of {BATCH}: {secs:.2} s, {:.0} requests/s",
            REQUESTS as f64 / secs
        );
    }
    let start = Instant::now();
    let rows = store.request_rows("r").unwrap();
    println!(
        "read back {} rows in {:.2} s",
        rows.len(),
        start.elapsed().as_secs_f64()
    );
    let size = std::fs::metadata(store.path()).unwrap().len();
    println!("database size {:.1} MB", size as f64 / 1e6);
}
