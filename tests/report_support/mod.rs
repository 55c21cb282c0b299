//! A synthetic suite written through the store's own API (no HTTP): two endpoints ×
//! two cache states × three concurrency tiers, with one combination never registered
//! and one run left pending. `slow` scales every time (1.2 = a 20% slower server).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use perfplan::metrics::names;
use perfplan::metrics::stats;
use perfplan::record::{Outcome, Phase, RequestRecord, Usage};
use perfplan::report::bootstrap::Sample;
use perfplan::store::{RunFinish, RunRow, RunStatus, Store, StoredRequest, SuiteInfo};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

pub const REQUESTS: u64 = 24;
pub const WARMUP: u64 = 2;
pub const OUTPUT_TOKENS: u32 = 16;

pub struct Point {
    pub endpoint: &'static str,
    pub cache_state: &'static str,
    pub concurrency: u32,
}

pub fn points() -> Vec<Point> {
    let mut out = Vec::new();
    for endpoint in ["cache-on", "cache-off"] {
        for cache_state in ["cold", "warm"] {
            for concurrency in [1, 4, 8] {
                if (endpoint, cache_state, concurrency) != ("cache-on", "warm", 1) {
                    out.push(Point {
                        endpoint,
                        cache_state,
                        concurrency,
                    });
                }
            }
        }
    }
    out
}

fn axes(p: &Point) -> Value {
    json!({
        "endpoint": p.endpoint,
        "cache_state": p.cache_state,
        "load": {"concurrency": p.concurrency, "requests": REQUESTS, "warmup": WARMUP},
    })
}

/// Closed-loop records: `concurrency` slots, each sending when its previous request ended.
pub fn records(p: &Point, slow: f64, seed: u64) -> Vec<RequestRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let c = f64::from(p.concurrency);
    let cached = p.endpoint == "cache-on" && p.cache_state == "warm";
    let ttft_base = 40.0 * (1.0 + 0.3 * c) * if cached { 0.5 } else { 1.0 } * slow;
    let itl = 8.0 * (1.0 + 0.1 * c) * slow;
    let mut slots = vec![Duration::ZERO; p.concurrency as usize];
    (0..REQUESTS + WARMUP)
        .map(|index| {
            let slot = slots
                .iter()
                .enumerate()
                .min_by_key(|(_, t)| **t)
                .map(|(i, _)| i)
                .unwrap();
            let sent = slots[slot];
            let ttft = ttft_base * rng.gen_range(0.9..1.1);
            let gap = itl * rng.gen_range(0.9..1.1);
            let content_times: Vec<Duration> = (0..OUTPUT_TOKENS)
                .map(|k| sent + Duration::from_secs_f64((ttft + gap * f64::from(k)) / 1e3))
                .collect();
            let end = *content_times.last().unwrap() + Duration::from_micros(200);
            slots[slot] = end;
            RequestRecord {
                index,
                item: index,
                phase: if index < WARMUP {
                    Phase::Warmup
                } else {
                    Phase::Measured
                },
                intended: sent,
                sent,
                connect: None,
                tls: None,
                first_chunk: content_times.first().copied(),
                last_chunk: content_times.last().copied(),
                first_answer: None,
                content_times,
                end,
                outcome: Outcome::Ok,
                http_status: Some(200),
                error: None,
                finish_reason: Some("length".into()),
                usage: Usage {
                    prompt_tokens: Some(128),
                    completion_tokens: Some(OUTPUT_TOKENS),
                    cached_tokens: Some(if cached { 64 } else { 0 }),
                    reasoning_tokens: None,
                },
                output_text: String::new(),
                reasoning_text: String::new(),
                client_reasoning_tokens: None,
                stream_tokens: None,
                output_bytes: None,
                client_input_tokens: Some(130),
                client_output_tokens: Some(OUTPUT_TOKENS),
                request_bytes: 600,
                response_bytes: 4000,
                read_clock: None,
                answer: None,
                content_delays: Vec::new(),
                unstreamed: false,
                raw: Vec::new(),
                replica: None,
                class: None,
                tools: None,
                tool_calls: Vec::new(),
            }
        })
        .collect()
}

/// The aggregates a run would get (every name present, unknown ones null).
pub fn metrics_of(store: &Store, run_id: &str) -> BTreeMap<String, Option<f64>> {
    let rows = store.request_rows(run_id).unwrap();
    let s = Sample::from_rows(&rows, perfplan::metrics::MetricDefinitions::Perfplan);
    let mut m: BTreeMap<String, Option<f64>> =
        names::all_names().into_iter().map(|n| (n, None)).collect();
    for (q, values) in [
        ("ttft", &s.ttft),
        ("tpot", &s.tpot),
        ("latency", &s.latency),
    ] {
        stats::fill(&mut m, q, values.clone());
    }
    let n = s.requests.len() as f64;
    let out: f64 = s.requests.iter().map(|r| r.1).sum();
    let total: f64 = s.requests.iter().map(|r| r.2).sum();
    m.insert("requests_ok".into(), Some(n));
    m.insert("requests_failed".into(), Some(0.0));
    m.insert("success_ratio".into(), Some(1.0));
    m.insert("duration_s".into(), Some(s.duration_s));
    m.insert("rps".into(), Some(n / s.duration_s));
    m.insert("output_tps".into(), Some(out / s.duration_s));
    m.insert("total_tps".into(), Some(total / s.duration_s));
    m
}

pub fn suite_info() -> SuiteInfo {
    let mut info = SuiteInfo::new("signoff", "[plan]\nname = \"signoff\"\nseed = 42\n");
    info.seed = 42;
    info.report = json!({
        "rows": ["load"],
        "columns": ["endpoint", "cache_state"],
        "metrics": ["ttft_p50", "tpot_mean", "output_tps"],
    });
    info.gates = json!({"ttft_p99": "<= 2s", "success_ratio": ">= 0.999"});
    info
}

/// Writes the whole suite into `dir` and returns the open store.
pub fn build_suite(dir: &Path, slow: f64) -> Store {
    let mut store = Store::create(dir, &suite_info()).unwrap();
    let pts = points();
    let rows: Vec<RunRow> = pts
        .iter()
        .enumerate()
        .map(|(i, p)| RunRow {
            id: format!("{}-{}-c{}", p.endpoint, p.cache_state, p.concurrency),
            ordinal: i as u32,
            axes: axes(p),
            settings: json!({"load": {"concurrency": p.concurrency}}),
        })
        .collect();
    store.register_runs(&rows).unwrap();
    for (i, (p, row)) in pts.iter().zip(&rows).enumerate() {
        if row.id == "cache-off-warm-c8" {
            continue; // left pending
        }
        store.begin_run(&row.id).unwrap();
        let recs = records(p, slow, 1000 + i as u64);
        for chunk in recs.chunks(8) {
            let batch: Vec<StoredRequest<'_>> = chunk
                .iter()
                .map(|r| StoredRequest {
                    record: r,
                    target_input_tokens: Some(128),
                })
                .collect();
            store.write_requests(&row.id, &batch).unwrap();
        }
        let metrics = metrics_of(&store, &row.id);
        store
            .finish_run(
                &row.id,
                &RunFinish {
                    status: RunStatus::Done,
                    metrics: &metrics,
                    facts: &perfplan::record::RunFacts::default(),
                    warnings: &[],
                    error: None,
                    verdict: Some(&perfplan::trust::Verdict::judge(&[], &[])),
                },
            )
            .unwrap();
    }
    store
}
