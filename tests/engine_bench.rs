//! A rough client-efficiency figure against a separately started simulator (not a timed
//! test; ignored by default). Start `perfplan sim --port P --ttft-base 0ms --itl-base 0ms`
//! (release), then:
//!
//! ```text
//! BENCH_URL=http://127.0.0.1:P BENCH_C=64 BENCH_N=100000 BENCH_TOKENS=1 \
//!   cargo test --release --test engine_bench -- --ignored --nocapture
//! ```
//!
//! `BENCH_SESSION=1` sends every request with its session id in `x-session-id` (the cost
//! of `session_header`).
//! `BENCH_RATE=50` runs an open loop (Poisson, seed 42) instead of the closed loop.
//! Prints requests/s, client CPU seconds per 1,000 requests, and the TTFT error against
//! the simulator's truth (`GET /sim/truth?reset=true` before and after).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kept_support;
use kept_support::run_kept;
use std::time::Duration;

use perfplan::api::{build_body, ApiKind, BodyInput, Prompt};
use perfplan::engine::{
    Arrivals, CancelHandle, Endpoint, Load, PreparedRequest, RunConfig, Target, VecSource,
};
use perfplan::metrics::{summarize, SummaryOptions};
use perfplan::record::{Phase, RequestRecord};
use serde_json::{json, Value};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

async fn truth(base: &str, reset: bool) -> Value {
    let url = format!("{base}/sim/truth{}", if reset { "?reset=true" } else { "" });
    let bytes = reqwest::get(url).await.unwrap().bytes().await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
#[ignore]
fn client_efficiency_against_a_running_sim() {
    let base = env("BENCH_URL", "http://127.0.0.1:18000");
    let c: u32 = env("BENCH_C", "64").parse().unwrap();
    let n: usize = env("BENCH_N", "100000").parse().unwrap();
    let tokens: u32 = env("BENCH_TOKENS", "1").parse().unwrap();
    let threads: usize = env("BENCH_THREADS", "1").parse().unwrap();
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .unwrap()
    };
    rt.block_on(async move {
        let fields = json!({"max_tokens": tokens, "ignore_eos": true});
        let input = BodyInput {
            model: "bench",
            prompt: &Prompt::Text("hello".into()),
            fields: fields.as_object().unwrap(),
            stream: true,
            include_usage: true,
            continuous_usage: false,
            reject_fields: &[],
        };
        let (path, body) = build_body(ApiKind::Chat, &input).unwrap();
        let sessions = env("BENCH_SESSION", "0") == "1";
        let reqs: Vec<PreparedRequest> = (0..n + c as usize)
            .map(|i| PreparedRequest {
                item: i as u64,
                phase: if i < c as usize { Phase::Warmup } else { Phase::Measured },
                kind: ApiKind::Chat,
                path: path.into(),
                body: body.clone(),
                stream: true,
                client_input_tokens: None,
                max_output_tokens: None,
                running_usage: false,
                headers: Vec::new(),
                session: sessions.then_some(i as u64),
                class: None,
                cancel_after: None,
                tools: None,
                check: None,
            })
            .collect();
        let rate: Option<f64> = std::env::var("BENCH_RATE").ok().and_then(|r| r.parse().ok());
        let load = match rate {
            Some(rate) => Load::Open { rate, arrivals: Arrivals::Poisson, seed: 42, max_in_flight: None },
            None => Load::Closed { concurrency: c },
        };
        let cfg = RunConfig { load, duration: None, grace: Duration::from_secs(1) };
        let session_header = sessions.then(|| "x-session-id".to_string());
        let ep = Endpoint::new(&Target { base_url: base.clone(), session_header, ..Target::default() }, c as usize).unwrap();
        truth(&base, true).await;
        let out = run_kept(&ep, &mut VecSource::new(reqs), &cfg, &CancelHandle::new(), |_: &RequestRecord| {})
            .await
            .unwrap();
        let server = truth(&base, true).await;
        let cpu = out.client_cpu.unwrap().as_secs_f64();
        let opts = SummaryOptions { client_cpu_s: Some(cpu), client_wall_s: Some(out.wall.as_secs_f64()), ..SummaryOptions::default() };
        let s = summarize(&out.records, &opts);
        let mut server_ttft: Vec<f64> = server["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| Some((r["first_token_us"].as_f64()? - r["arrival_us"].as_f64()?) / 1e3))
            .collect();
        server_ttft.sort_by(f64::total_cmp);
        let mut sent: Vec<f64> = out.records.iter().filter(|r| r.phase == Phase::Measured).map(|r| r.sent.as_secs_f64()).collect();
        sent.sort_by(f64::total_cmp);
        let gaps: Vec<f64> = sent.windows(2).map(|w| w[1] - w[0]).collect();
        let gap_mean = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
        let gap_cv = (gaps.iter().map(|g| (g - gap_mean).powi(2)).sum::<f64>() / gaps.len().max(1) as f64).sqrt() / gap_mean;
        println!("sends: achieved rate {:.2}/s, gap CV {:.3}, lateness p50 {:.3} p99 {:.3} ms", 1.0 / gap_mean, gap_cv, s.values["lateness_p50"].unwrap_or(f64::NAN), s.values["lateness_p99"].unwrap_or(f64::NAN));
        let server_mean = server_ttft.iter().sum::<f64>() / server_ttft.len() as f64;
        let total = out.records.len() as f64;
        println!(
            "c={c} n={n} tokens={tokens} threads={threads}: {:.0} req/s (all {:.0}), client CPU {:.3} s = {:.4} CPU-s per 1,000 requests, ok {:?}/{n}",
            s.values["rps"].unwrap(),
            total / out.wall.as_secs_f64(),
            cpu,
            cpu / total * 1000.0,
            s.values["requests_ok"],
        );
        println!(
            "TTFT client mean {:.3} p99 {:.3} ms; server truth mean {:.3} p99 {:.3} ms; lateness p99 {:.3} ms; client_bound {:?}",
            s.values["ttft_mean"].unwrap_or(f64::NAN),
            s.values["ttft_p99"].unwrap_or(f64::NAN),
            server_mean,
            perfplan::metrics::percentile(&server_ttft, 99.0).unwrap_or(f64::NAN),
            s.values["lateness_p99"].unwrap_or(f64::NAN),
            s.client_bound,
        );
    });
}
