//! Stored rows are the truth: randomized records (seeded) are stored, read back, and must
//! come back exact in every field the metrics read, and every metric of the vocabulary
//! recomputed from them (under every `metric_definitions`, alone and pooled as an SLA
//! search pools trials) must equal the live one.
//!
//! `random_record` is the one place the fields are listed: it builds the record without
//! `..Default::default()`, so a new field does not compile until it is randomized here,
//! and `as_stored` names the only fields rows do not keep.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use perfplan::metrics::names::all_names;
use perfplan::metrics::sla::pool;
use perfplan::metrics::{summarize, MetricDefinitions, RunSummary, Slo, SloQuantity};
use perfplan::metrics::{SummaryOptions, Timing};
use perfplan::record::{
    Outcome, Phase, RequestRecord, StreamTokens, TlsHandshake, TokenSource, Usage,
};
use perfplan::store::{RunRow, Store, StoredRequest, SuiteInfo};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const DEFINITIONS: [MetricDefinitions; 3] = [
    MetricDefinitions::Perfplan,
    MetricDefinitions::Vllm,
    MetricDefinitions::Evalscope,
];

/// `Some(f(rng))` with probability `p`.
fn some<T>(rng: &mut ChaCha8Rng, p: f64, f: impl FnOnce(&mut ChaCha8Rng) -> T) -> Option<T> {
    rng.gen_bool(p).then(|| f(rng))
}

/// A time with nanoseconds, as the engine's clock reads it.
fn ns(rng: &mut ChaCha8Rng, from: Duration, max_us: u64) -> Duration {
    from + Duration::from_nanos(rng.gen_range(0..=max_us * 1_000))
}

/// Content chunk times after `from`: bursts (equal times), ordinary gaps, stalls.
fn chunk_times(rng: &mut ChaCha8Rng, from: Duration) -> Vec<Duration> {
    let n = match rng.gen_range(0..10) {
        0 => 0,
        1 => 1,
        2 => rng.gen_range(500..1500),
        _ => rng.gen_range(2..80),
    };
    let mut at = from;
    (0..n)
        .map(|_| {
            at = match rng.gen_range(0..10) {
                0 => at,
                1 => ns(rng, at, 3_000_000),
                _ => ns(rng, at, 40_000),
            };
            at
        })
        .collect()
}

fn outcome(rng: &mut ChaCha8Rng) -> Outcome {
    if rng.gen_bool(0.75) {
        Outcome::Ok
    } else {
        Outcome::ALL[rng.gen_range(0..Outcome::ALL.len())]
    }
}

/// One record as the engine could produce it, every field randomized.
fn random_record(rng: &mut ChaCha8Rng, index: u64) -> RequestRecord {
    let intended = Duration::from_micros(index * 3_000) + ns(rng, Duration::ZERO, 2_000);
    let late = if rng.gen_bool(0.1) { 50_000 } else { 300 };
    let sent = ns(rng, intended, late);
    let streamed = rng.gen_bool(0.8);
    let role = ns(rng, sent, 200_000);
    let content_times = if streamed {
        chunk_times(rng, role)
    } else {
        Vec::new()
    };
    let first_chunk = (streamed && rng.gen_bool(0.95))
        .then(|| *content_times.first().unwrap_or(&role).min(&role));
    let last_chunk = first_chunk.map(|f| ns(rng, *content_times.last().unwrap_or(&f), 2_000));
    let end = ns(rng, last_chunk.unwrap_or(role), 5_000);
    // The first answer chunk after any reasoning: one of the content chunks, or none.
    let first_answer = match content_times.len() {
        0 => None,
        n => some(rng, 0.9, |r| content_times[r.gen_range(0..n)]),
    };
    let phase = [Phase::Warmup, Phase::Priming, Phase::Measured][rng.gen_range(0..6).min(2)];
    let outcome = outcome(rng);
    let stream_tokens = streamed.then(|| stream_tokens(rng, content_times.len()));
    let content_delays: Vec<Duration> = match rng.gen_bool(0.5) {
        true => (0..content_times.len())
            .map(|_| Duration::from_nanos(rng.gen_range(0..20_000_000)))
            .collect(),
        false => Vec::new(),
    };
    RequestRecord {
        index,
        item: rng.gen_range(0..40),
        phase,
        intended,
        sent,
        connect: some(rng, 0.3, |r| {
            Duration::from_nanos(r.gen_range(0..5_000_000))
        }),
        tls: some(rng, 0.2, |r| TlsHandshake {
            took: Duration::from_nanos(r.gen_range(0..5_000_000)),
            resumed: r.gen_bool(0.5),
        }),
        first_chunk,
        content_times,
        last_chunk,
        first_answer,
        end,
        outcome,
        http_status: some(rng, 0.9, |r| [200, 400, 429, 500, 503][r.gen_range(0..5)]),
        error: (outcome != Outcome::Ok).then(|| "é".repeat(rng.gen_range(0..256))),
        finish_reason: some(rng, 0.8, |r| {
            ["stop", "length"][r.gen_range(0..2)].to_string()
        }),
        usage: Usage {
            prompt_tokens: some(rng, 0.7, |r| r.gen_range(0..9000)),
            completion_tokens: some(rng, 0.7, |r| r.gen_range(0..2000)),
            cached_tokens: some(rng, 0.5, |r| r.gen_range(0..9000)),
            reasoning_tokens: some(rng, 0.3, |r| r.gen_range(0..500)),
        },
        output_text: if rng.gen_bool(0.8) {
            "answer".into()
        } else {
            String::new()
        },
        reasoning_text: if rng.gen_bool(0.3) {
            "thought".into()
        } else {
            String::new()
        },
        client_reasoning_tokens: some(rng, 0.5, |r| r.gen_range(0..500)),
        stream_tokens,
        output_bytes: some(rng, 0.9, |r| {
            [0, r.gen_range(1..1 << 20)][r.gen_range(0..2)]
        }),
        client_output_tokens: some(rng, 0.6, |r| r.gen_range(0..2000)),
        client_input_tokens: some(rng, 0.6, |r| r.gen_range(0..9000)),
        request_bytes: rng.gen_range(0..1 << 20),
        response_bytes: rng.gen_range(0..1 << 24),
        raw: Vec::new(),
        // Not stored: the run's evidence keeps what it says (see `trust::evidence`).
        read_clock: None,
        answer: None,
        content_delays,
        unstreamed: false,
        replica: some(rng, 0.5, |r| r.gen_range(0..8)),
        class: some(rng, 0.5, |r| r.gen_range(0..64)),
        tools: some(rng, 0.3, |r| perfplan::record::ToolTally {
            round: r.gen_range(0..8),
            calls: r.gen_range(0..5),
            parsed: r.gen_range(0..3),
        }),
        // Not stored: the calls build the next round and are then dropped.
        tool_calls: Vec::new(),
    }
}

/// A stream's counts over `content` content chunks: one token a chunk, or several and
/// none (empty chunks between), from chunks or from per-chunk usage.
fn stream_tokens(rng: &mut ChaCha8Rng, content: usize) -> StreamTokens {
    let one_each = rng.gen_bool(0.5);
    let mut total = 0u32;
    let at_content = (0..content)
        .map(|_| {
            total += if one_each { 1 } else { rng.gen_range(0..4) };
            total
        })
        .collect();
    StreamTokens {
        choice_chunks: content as u32 + rng.gen_range(0..8),
        at_content,
        total: total + rng.gen_range(0..3),
        source: [TokenSource::Chunks, TokenSource::Usage][rng.gen_range(0..2)],
    }
}

/// A run's records, as the engine hands them on (times truncated to the record's
/// resolution, as `engine::run` does).
fn records(seed: u64, n: u64) -> Vec<RequestRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let mut r = random_record(&mut rng, i);
            r.truncate_to_resolution();
            r
        })
        .collect()
}

/// The record as a row keeps it: everything but the response text and raw events.
fn as_stored(r: &RequestRecord) -> RequestRecord {
    RequestRecord {
        output_text: String::new(),
        reasoning_text: String::new(),
        raw: Vec::new(),
        ..r.clone()
    }
}

/// Stores `records` as one run and reads them back.
fn round_trip(records: &[RequestRecord]) -> Vec<RequestRecord> {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), &SuiteInfo::new("rows", "")).unwrap();
    let run = RunRow {
        id: "3efd0e8e706f".into(),
        ordinal: 1,
        axes: json!({}),
        settings: json!({}),
    };
    store.register_runs(&[run]).unwrap();
    store.begin_run("3efd0e8e706f").unwrap();
    for batch in records.chunks(97) {
        let batch: Vec<StoredRequest<'_>> = batch
            .iter()
            .map(|r| StoredRequest {
                record: r,
                target_input_tokens: Some(512),
            })
            .collect();
        store.write_requests("3efd0e8e706f", &batch).unwrap();
    }
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    store.request_records("3efd0e8e706f").unwrap()
}

fn options(definitions: MetricDefinitions) -> SummaryOptions {
    let slo = |quantity, max_ms| Slo::at_most(quantity, max_ms);
    SummaryOptions {
        definitions,
        slos: vec![
            slo(SloQuantity::Ttft, 150.0),
            slo(SloQuantity::Tpot, 30.0),
            slo(SloQuantity::Itl, 35.0),
            slo(SloQuantity::Latency, 2_500.0),
        ],
        inputs_per_request: Some(2),
        ..SummaryOptions::default()
    }
}

/// Every metric name of the vocabulary equal, to the bit, and every count.
fn assert_same(live: &RunSummary, back: &RunSummary, what: &str) {
    for name in all_names() {
        let (a, b) = (live.values.get(&name), back.values.get(&name));
        let bits = |v: Option<&Option<f64>>| v.map(|v| v.map(f64::to_bits));
        assert!(
            a.is_some(),
            "{what}: `{name}` missing from the live summary"
        );
        assert_eq!(
            bits(a),
            bits(b),
            "{what}: `{name}` live {a:?}, recomputed {b:?}"
        );
    }
    let counts = |s: &RunSummary| {
        (
            s.requests,
            s.failures.clone(),
            s.http_statuses.clone(),
            (s.estimated_input, s.estimated_output, s.unknown_output),
            (s.truncated, s.unmeasured, s.client_bound.clone()),
        )
    };
    assert_eq!(counts(live), counts(back), "{what}: counts");
}

#[test]
fn every_field_the_metrics_read_round_trips_exactly() {
    for seed in 0..12 {
        let live = records(seed, 400);
        let back = round_trip(&live);
        assert_eq!(back.len(), live.len(), "seed {seed}");
        for (l, b) in live.iter().zip(&back) {
            assert_eq!(&as_stored(l), b, "seed {seed}, request {}", l.index);
            for defs in DEFINITIONS {
                let timing = |r| -> Timing { perfplan::metrics::timing(r, defs) };
                assert_eq!(timing(l), timing(b), "seed {seed}, request {}", l.index);
            }
        }
    }
}

#[test]
fn metrics_recomputed_from_rows_equal_the_live_ones_under_every_definition() {
    for seed in 100..112 {
        let live = records(seed, 400);
        let back = round_trip(&live);
        for defs in DEFINITIONS {
            let what = format!("seed {seed}, {}", defs.as_str());
            let opts = options(defs);
            assert_same(&summarize(&live, &opts), &summarize(&back, &opts), &what);
            // An SLA search pools its trials' records (read back from their rows).
            let (a, b) = (live.split_at(150), back.split_at(150));
            let pooled = |x: &[RequestRecord], y: &[RequestRecord]| {
                summarize(&pool(vec![x.to_vec(), y.to_vec()]), &opts)
            };
            let what = format!("{what}, pooled");
            assert_same(&pooled(a.0, a.1), &pooled(b.0, b.1), &what);
        }
    }
}

#[test]
fn truncation_to_the_resolution_keeps_whole_microseconds_and_their_order() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for i in 0..200 {
        let raw = random_record(&mut rng, i);
        let mut r = raw.clone();
        r.truncate_to_resolution();
        let whole = |d: &Duration| d.subsec_nanos() % 1_000 == 0;
        assert!(whole(&r.sent) && whole(&r.end) && r.content_times.iter().all(whole));
        assert!(r.content_times.windows(2).all(|w| w[0] <= w[1]));
        assert!(raw.sent - r.sent < Duration::from_micros(1));
    }
}
