//! The engine against the in-process simulator over real HTTP on 127.0.0.1 (port 0):
//! timing accuracy, counts end to end, open-loop arrivals, duration, faults, bodies sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kept_support;
use kept_support::run_kept;
use std::time::Duration;

use perfplan::api::{build_body, ApiKind, BodyInput, Prompt};
use perfplan::engine::{
    Arrivals, CancelHandle, Endpoint, Load, PreparedRequest, RunConfig, Target, Timeouts, VecSource,
};
use perfplan::metrics::{summarize, SummaryOptions};
use perfplan::record::{Outcome, Phase, RequestRecord};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::{json, Map, Value};

fn ms(n: u64) -> HumanDuration {
    HumanDuration(Duration::from_millis(n))
}

struct Req<'a> {
    kind: ApiKind,
    prompt: Prompt,
    fields: Value,
    stream: bool,
    reject: &'a [String],
}

fn prepare(r: &Req<'_>, warmup: usize, measured: usize) -> Vec<PreparedRequest> {
    let fields: Map<String, Value> = r.fields.as_object().cloned().unwrap();
    let input = BodyInput {
        model: "sim-model",
        prompt: &r.prompt,
        fields: &fields,
        stream: r.stream,
        include_usage: true,
        continuous_usage: false,
        reject_fields: r.reject,
    };
    let (path, body) = build_body(r.kind, &input).unwrap();
    (0..warmup + measured)
        .map(|i| PreparedRequest {
            item: i as u64,
            phase: if i < warmup {
                Phase::Warmup
            } else {
                Phase::Measured
            },
            kind: r.kind,
            path: path.into(),
            body: body.clone(),
            stream: r.stream,
            client_input_tokens: Some(3),
            max_output_tokens: None,
            running_usage: false,
            headers: Vec::new(),
            session: None,
            class: None,
            cancel_after: None,
            tools: None,
            check: None,
        })
        .collect()
}

fn chat(tokens: u32) -> Req<'static> {
    Req {
        kind: ApiKind::Chat,
        prompt: Prompt::Text("hello there".into()),
        fields: json!({"max_tokens": tokens, "ignore_eos": true}),
        stream: true,
        reject: &[],
    }
}

async fn go(sim: &SimServer, reqs: Vec<PreparedRequest>, cfg: RunConfig) -> kept_support::Ran {
    let target = Target {
        base_url: sim.base_url(),
        timeouts: Timeouts {
            connect: Duration::from_secs(5),
            read: Duration::from_secs(5),
            total: Some(Duration::from_secs(20)),
        },
        ..Target::default()
    };
    let ep = Endpoint::new(&target, cfg.pool_size()).unwrap();
    let mut source = VecSource::new(reqs);
    let mut seen = 0usize;
    let mut sink = |_: &RequestRecord| seen += 1;
    let out = run_kept(&ep, &mut source, &cfg, &CancelHandle::new(), &mut sink)
        .await
        .unwrap();
    assert_eq!(seen, out.records.len());
    out
}

fn closed(concurrency: u32) -> RunConfig {
    RunConfig {
        load: Load::Closed { concurrency },
        duration: None,
        grace: Duration::from_secs(1),
    }
}

/// Achieved rate and coefficient of variation of the gaps between `times`.
fn rate_and_cv(times: impl Iterator<Item = Duration>) -> (f64, f64) {
    let mut t: Vec<f64> = times.map(|d| d.as_secs_f64()).collect();
    t.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let rate = gaps.len() as f64 / (t[t.len() - 1] - t[0]);
    let m = mean(gaps.iter().copied());
    let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    (rate, sd / m)
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    v.iter().sum::<f64>() / v.len() as f64
}

/// Closed loop at `concurrency` against a simulator with TTFT 40 ms and ITL `itl_ms`.
/// Warmup requests fill the slots first with 6..=17 output tokens each, so they end at
/// staggered times and hand their slots to measured requests (5 tokens) the way a
/// steady closed loop does, instead of in one burst.
async fn timing_at(concurrency: u32, requests: usize, itl_ms: u64) {
    let cfg = SimConfig {
        ttft_base: ms(40),
        itl_base: ms(itl_ms),
        max_num_seqs: 1024,
        itl_knee: 1024,
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let warmup = concurrency as usize;
    let mut reqs = prepare(&chat(5), 0, requests);
    let stagger: Vec<PreparedRequest> = (0..warmup)
        .flat_map(|i| {
            let mut w = prepare(&chat(6 + (i % 12) as u32), 1, 0);
            w[0].item = i as u64;
            w
        })
        .collect();
    reqs.splice(0..0, stagger);
    let out = go(&sim, reqs, closed(concurrency)).await;
    let measured: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .collect();
    assert_eq!(measured.len(), requests);
    assert!(
        measured.iter().all(|r| r.outcome == Outcome::Ok),
        "{:?}",
        measured[0]
    );
    assert_eq!(sim.received().len(), warmup + requests);
    let s = summarize(&out.records, &SummaryOptions::default());
    assert_eq!(s.values["requests_ok"], Some(requests as f64));
    assert!(measured
        .iter()
        .all(|r| r.usage.completion_tokens == Some(5)));
    // The server's own arrival → first token of the measured requests (5 tokens each).
    let truth: Vec<f64> = sim
        .truth()
        .iter()
        .filter(|t| t.tokens_sent == 5)
        .map(|t| (t.first_token_us.unwrap() - t.arrival_us) as f64 / 1e3)
        .collect();
    let (ttft, tpot) = (
        s.values["ttft_mean"].unwrap(),
        s.values["tpot_mean"].unwrap(),
    );
    let server = mean(truth.iter().copied());
    eprintln!("c={concurrency}: client TTFT {ttft:.2} ms, server {server:.2} ms; TPOT {tpot:.2} ms; lateness p99 {:?}", s.values["lateness_p99"]);
    // Within 5 ms of the setting, or (when the shared CPU made the server itself late)
    // within 5 ms of what the server says it did. A client starved of CPU must say so
    // (client_bound) instead of reporting skewed numbers silently.
    match &s.client_bound {
        None => assert!(
            (ttft - 40.0).abs() <= 5.0 || (ttft - server).abs() <= 5.0,
            "c={concurrency}: client TTFT {ttft} ms, server {server} ms, setting 40 ms"
        ),
        Some(reason) => eprintln!("c={concurrency}: TTFT not checked: {reason}"),
    }
    let server_tpot = mean(
        sim.truth()
            .iter()
            .filter(|t| t.tokens_sent == 5)
            .map(|t| (t.last_token_us.unwrap() - t.first_token_us.unwrap()) as f64 / 4e3),
    );
    let tpot_ok = (tpot - itl_ms as f64).abs() <= 5.0 || (tpot - server_tpot).abs() <= 5.0;
    assert!(
        tpot_ok || s.client_bound.is_some(),
        "c={concurrency}: TPOT {tpot} ms, server {server_tpot} ms, setting {itl_ms} ms"
    );
    sim.shutdown().await;
}

/// One test, three levels in turn: the levels must not compete with each other for CPU.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timing_matches_the_simulator_at_concurrency_1_64_512() {
    timing_at(1, 5, 20).await;
    timing_at(64, 128, 20).await;
    timing_at(512, 512, 50).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_sent_are_what_the_plan_said() {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(1),
        itl_base: ms(1),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let reject = vec!["seed".to_string()];
    let mut reqs = prepare(
        &Req {
            kind: ApiKind::Chat,
            prompt: Prompt::Text("hi".into()),
            fields: json!({"max_tokens": 2, "seed": 7}),
            stream: true,
            reject: &reject,
        },
        0,
        2,
    );
    reqs.extend(prepare(
        &Req {
            kind: ApiKind::Completions,
            prompt: Prompt::TokenIds(vec![5, 6, 7]),
            fields: json!({"max_tokens": 2}),
            stream: true,
            reject: &[],
        },
        0,
        2,
    ));
    let out = go(&sim, reqs, closed(1)).await;
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Ok));
    let got = sim.received();
    assert_eq!(got.len(), 4);
    for r in &got[..2] {
        assert!(r.body.get("seed").is_none());
        assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    }
    for r in &got[2..] {
        assert_eq!(r.path, "/v1/completions");
        assert_eq!(r.body["prompt"], json!([5, 6, 7]));
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_poisson_rate_and_cv() {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(1),
        itl_base: ms(1),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    // 800 arrivals at 200/s (4 s) instead of 1,000 at 50/s (20 s): the same statistics
    // from 799 gaps. The schedule is seeded: its own gaps have mean 0.98/rate and CV 0.986;
    // what is tested is that the sends reproduce it (5 ms mean gaps leave room for jitter).
    let n = 800;
    let cfg = RunConfig {
        load: Load::Open {
            rate: 200.0,
            arrivals: Arrivals::Poisson,
            seed: 42,
            max_in_flight: None,
        },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let out = go(&sim, prepare(&chat(1), 0, n), cfg).await;
    assert_eq!(out.records.len(), n);
    assert_eq!(sim.received().len(), n);
    // The schedule the engine followed (intended times) is the seeded process.
    let (rate, cv) = rate_and_cv(out.records.iter().map(|r| r.intended));
    assert!((rate - 200.0).abs() / 200.0 <= 0.05, "intended rate {rate}");
    assert!((0.9..=1.1).contains(&cv), "intended cv {cv}");
    // The actual sends reproduce it, unless the client itself was starved of CPU, which
    // the summary must then say (client_bound): a loaded CI machine is not luck-proof.
    let (rate, cv) = rate_and_cv(out.records.iter().map(|r| r.sent));
    let s = summarize(&out.records, &SummaryOptions::default());
    assert!((rate - 200.0).abs() / 200.0 <= 0.05, "achieved rate {rate}");
    match &s.client_bound {
        None => assert!((0.9..=1.1).contains(&cv), "achieved cv {cv}"),
        Some(reason) => eprintln!("achieved cv {cv} not checked: {reason}"),
    }
    sim.shutdown().await;
}

/// A 300 ms soft stop over a closed loop of 4 against a 5 ms / 5 ms simulator, after
/// `warmup` warmup requests.
async fn run_for_300ms(warmup: usize) -> (SimServer, kept_support::Ran) {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(5),
        itl_base: ms(5),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let cfg = RunConfig {
        load: Load::Closed { concurrency: 4 },
        duration: Some(Duration::from_millis(300)),
        grace: Duration::from_secs(1),
    };
    let out = go(&sim, prepare(&chat(4), warmup, 100_000), cfg).await;
    (sim, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_stops_sending_on_time() {
    let (sim, out) = run_for_300ms(0).await;
    assert!(out.stopped_by_duration);
    let last_sent = out.records.iter().map(|r| r.sent).max().unwrap();
    assert!(
        last_sent <= Duration::from_millis(310),
        "last sent at {last_sent:?}"
    );
    assert!(out.wall < Duration::from_millis(600), "wall {:?}", out.wall);
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Ok));
    assert_eq!(sim.received().len(), out.records.len());
    sim.shutdown().await;
}

/// Warmup does not use the duration budget: it counts from the first measured request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_counts_from_the_first_measured_request() {
    // 40 warmup requests of ~20 ms, 4 at a time: about 200 ms of warmup.
    let (sim, out) = run_for_300ms(40).await;
    assert!(out.stopped_by_duration);
    let measured: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .collect();
    let first = measured.iter().map(|r| r.sent).min().unwrap();
    let last = measured.iter().map(|r| r.sent).max().unwrap();
    assert!(first >= Duration::from_millis(100), "warmup took {first:?}");
    let window = last - first;
    assert!(
        window >= Duration::from_millis(200) && window <= Duration::from_millis(310),
        "measured requests were sent over {window:?}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_are_counted_by_class() {
    faults_with(false).await;
    faults_with(true).await;
}

async fn faults_with(force_reqwest: bool) {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(1),
        itl_base: ms(1),
        fault_http_500: 0.1,
        fault_drop: 0.1,
        fault_malformed: 0.1,
        fault_stall: 0.1,
        seed: 3,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let target = Target {
        base_url: sim.base_url(),
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            read: Duration::from_millis(300),
            total: None,
        },
        force_reqwest,
        ..Target::default()
    };
    let ep = Endpoint::new(&target, 8).unwrap();
    let mut source = VecSource::new(prepare(&chat(6), 0, 50));
    let out = run_kept(
        &ep,
        &mut source,
        &closed(8),
        &CancelHandle::new(),
        |_: &RequestRecord| {},
    )
    .await
    .unwrap();
    let count = |o: Outcome| out.records.iter().filter(|r| r.outcome == o).count();
    assert_eq!(out.records.len(), 50);
    assert_eq!(count(Outcome::Http), 5);
    assert_eq!(count(Outcome::StreamBroken), 5);
    assert_eq!(count(Outcome::BadBody), 5);
    assert_eq!(count(Outcome::Timeout), 5);
    assert_eq!(count(Outcome::Ok), 30);
    let s = summarize(&out.records, &SummaryOptions::default());
    assert_eq!(s.failures.get("http"), Some(&5));
    assert_eq!(s.values["requests_failed"], Some(20.0));
    assert!(out
        .records
        .iter()
        .filter(|r| r.outcome == Outcome::Http)
        .all(|r| r.http_status == Some(500)));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_records_in_flight_requests_as_cancelled() {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(1),
        itl_base: ms(200),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let ep = Endpoint::new(
        &Target {
            base_url: sim.base_url(),
            ..Target::default()
        },
        4,
    )
    .unwrap();
    let mut source = VecSource::new(prepare(&chat(50), 0, 100));
    let cancel = CancelHandle::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        c2.cancel();
    });
    let cfg = RunConfig {
        load: Load::Closed { concurrency: 4 },
        duration: None,
        grace: Duration::from_millis(100),
    };
    let out = run_kept(&ep, &mut source, &cfg, &cancel, |_: &RequestRecord| {})
        .await
        .unwrap();
    assert!(out.cancelled);
    assert_eq!(out.records.len(), 4);
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Cancelled));
    assert!(out.records.iter().all(|r| !r.content_times.is_empty()));
    assert!(out.wall < Duration::from_millis(1000));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmup_hands_its_slots_to_measured_requests() {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(5),
        itl_base: ms(5),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let out = go(&sim, prepare(&chat(3), 4, 12), closed(4)).await;
    assert_eq!(out.records.len(), 16);
    assert_eq!(sim.received().len(), 16);
    let mut by_sent: Vec<&RequestRecord> = out.records.iter().collect();
    by_sent.sort_by_key(|r| r.sent);
    assert!(by_sent[..4].iter().all(|r| r.phase == Phase::Warmup));
    let first_warmup_end = by_sent[..4].iter().map(|r| r.end).min().unwrap();
    assert!(by_sent[4..]
        .iter()
        .all(|r| r.phase == Phase::Measured && r.sent >= first_warmup_end));
    // Never more than `concurrency` in flight.
    for r in &out.records {
        let overlapping = out
            .records
            .iter()
            .filter(|o| o.sent <= r.sent && o.end > r.sent)
            .count();
        assert!(overlapping <= 4, "{overlapping} in flight at {:?}", r.sent);
    }
    let s = summarize(&out.records, &SummaryOptions::default());
    assert_eq!((s.requests, s.unmeasured), (12, 4));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_works_end_to_end() {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(1),
        itl_base: ms(1),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let cases = [
        Req {
            kind: ApiKind::Chat,
            prompt: Prompt::Text("hi".into()),
            fields: json!({"max_tokens": 3}),
            stream: false,
            reject: &[],
        },
        Req {
            kind: ApiKind::Completions,
            prompt: Prompt::Text("hi".into()),
            fields: json!({"max_tokens": 3}),
            stream: false,
            reject: &[],
        },
        Req {
            kind: ApiKind::Responses,
            prompt: Prompt::Text("hi".into()),
            fields: json!({"max_output_tokens": 3}),
            stream: true,
            reject: &[],
        },
        Req {
            kind: ApiKind::Responses,
            prompt: Prompt::Text("hi".into()),
            fields: json!({"max_output_tokens": 3}),
            stream: false,
            reject: &[],
        },
        Req {
            kind: ApiKind::Embeddings,
            prompt: Prompt::Embedding(vec!["a b".into(), "c".into()]),
            fields: json!({}),
            stream: false,
            reject: &[],
        },
        Req {
            kind: ApiKind::Rerank,
            prompt: Prompt::Rerank {
                query: "q".into(),
                documents: vec!["d one".into(), "d two".into()],
            },
            fields: json!({}),
            stream: false,
            reject: &[],
        },
    ];
    let reqs: Vec<PreparedRequest> = cases.iter().flat_map(|c| prepare(c, 0, 1)).collect();
    let out = go(&sim, reqs, closed(1)).await;
    assert_eq!(out.records.len(), cases.len());
    for (r, c) in out.records.iter().zip(&cases) {
        assert_eq!(r.outcome, Outcome::Ok, "{:?}: {:?}", c.kind, r.error);
        assert!(
            r.usage.prompt_tokens.is_some(),
            "{:?} without usage",
            c.kind
        );
        if matches!(
            c.kind,
            ApiKind::Chat | ApiKind::Completions | ApiKind::Responses
        ) {
            assert_eq!(r.usage.completion_tokens, Some(3), "{:?}", c.kind);
            assert!(
                !r.output_text.is_empty() && r.finish_reason.is_some(),
                "{:?}",
                c.kind
            );
        }
    }
    assert_eq!(out.records[2].content_times.len(), 3);
    sim.shutdown().await;
}

/// A closed ramp's slots: a fall to 1 starts nothing until every request over the new
/// count has ended (none cancelled); a rise to 3 starts two at once, each planned at the
/// level's instant (so their lateness is the driver's own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_ramp_falls_without_refilling_and_rises_at_once() {
    let sim = SimServer::start(SimConfig {
        ttft_base: ms(5),
        itl_base: ms(5),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let at = Duration::from_millis;
    let cfg = RunConfig {
        load: Load::ClosedRamp {
            levels: vec![(at(0), 4), (at(150), 1), (at(300), 3)].into(),
        },
        duration: Some(at(450)),
        grace: Duration::from_secs(1),
    };
    assert_eq!(cfg.pool_size(), 4);
    let out = go(&sim, prepare(&chat(4), 0, 100_000), cfg).await;
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Ok));
    assert!(out.records.iter().all(|r| r.sent < at(451)));
    let before: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.intended < at(150))
        .collect();
    let between: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.intended >= at(150) && r.intended < at(300))
        .collect();
    let last_before = before.iter().map(|r| r.end).max().unwrap();
    let first_after = between.iter().map(|r| r.intended).min().unwrap();
    assert!(
        first_after >= last_before,
        "{first_after:?} < {last_before:?}"
    );
    for r in &between {
        let beside = between
            .iter()
            .filter(|o| o.sent < r.sent && o.end > r.sent)
            .count();
        assert_eq!(beside, 0, "two in flight at level 1");
    }
    let risen = out.records.iter().filter(|r| r.intended == at(300)).count();
    assert_eq!(risen, 2);
    assert_eq!(sim.received().len(), out.records.len());
    sim.shutdown().await;
}
