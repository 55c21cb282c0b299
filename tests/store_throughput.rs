//! How fast the store takes request rows and how many bytes of database a request costs
//! (ignored by default; run with
//! `cargo test --release --test store_throughput -- --ignored --nocapture`).

use std::time::{Duration, Instant};

use perfplan::record::{Outcome, Phase, RequestRecord, Usage};
use perfplan::store::{RunRow, Store, StoredRequest, SuiteInfo};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const REQUESTS: u64 = 20_000;
const BATCH: usize = 256;

/// A streamed request: `chunks` content chunks `itl_us` apart (±25%), TTFT 50–250 ms.
fn record(index: u64, chunks: u64, itl_us: u64, rng: &mut ChaCha8Rng) -> RequestRecord {
    let sent = Duration::from_micros(index * 1_000 + rng.gen_range(0..1_000));
    let mut at = sent + Duration::from_micros(rng.gen_range(50_000..250_000));
    let mut content_times = Vec::with_capacity(chunks as usize);
    for _ in 0..chunks {
        content_times.push(at);
        at += Duration::from_micros(rng.gen_range(itl_us * 3 / 4..=itl_us * 5 / 4));
    }
    let last = content_times.last().copied();
    RequestRecord {
        index,
        item: index,
        phase: Phase::Measured,
        intended: sent,
        sent,
        connect: None,
        tls: None,
        first_chunk: content_times.first().copied(),
        end: last.unwrap_or(sent) + Duration::from_micros(300),
        last_chunk: last,
        content_times,
        outcome: Outcome::Ok,
        http_status: Some(200),
        finish_reason: Some("length".into()),
        usage: Usage {
            prompt_tokens: Some(1024),
            completion_tokens: Some(chunks as u32),
            cached_tokens: Some(512),
            reasoning_tokens: None,
        },
        client_input_tokens: Some(1024),
        request_bytes: 5000,
        response_bytes: 200 * chunks,
        ..RequestRecord::default()
    }
}

#[test]
#[ignore = "measurement, not a check"]
fn write_throughput_and_bytes_per_request() {
    for (chunks, itl_us) in [(0, 0), (64, 1_000), (256, 20_000), (1024, 20_000)] {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::create(dir.path(), &SuiteInfo::new("bench", "")).unwrap();
        store
            .register_runs(&[RunRow {
                id: "3efd0e8e706f".into(),
                ordinal: 0,
                axes: json!({}),
                settings: json!({}),
            }])
            .unwrap();
        store.begin_run("3efd0e8e706f").unwrap();
        let path = store.path().to_path_buf();
        let empty = std::fs::metadata(&path).unwrap().len();
        let mut rng = ChaCha8Rng::seed_from_u64(chunks);
        let records: Vec<RequestRecord> = (0..REQUESTS)
            .map(|i| record(i, chunks, itl_us, &mut rng))
            .collect();
        let start = Instant::now();
        for chunk in records.chunks(BATCH) {
            let batch: Vec<StoredRequest<'_>> = chunk
                .iter()
                .map(|r| StoredRequest {
                    record: r,
                    target_input_tokens: Some(1024),
                })
                .collect();
            store.write_requests("3efd0e8e706f", &batch).unwrap();
        }
        let secs = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let rows = store.request_rows("3efd0e8e706f").unwrap();
        let read = start.elapsed().as_secs_f64();
        assert_eq!(rows.len() as u64, REQUESTS);
        drop(store); // checkpoints the WAL into the file
        let size = std::fs::metadata(&path).unwrap().len() - empty;
        println!(
            "{chunks:>4} chunks, ITL ~{itl_us} µs: {:.0} requests/s written, {:.0} read; \
             {:.0} bytes of database per request",
            REQUESTS as f64 / secs,
            REQUESTS as f64 / read,
            size as f64 / REQUESTS as f64,
        );
    }
}
