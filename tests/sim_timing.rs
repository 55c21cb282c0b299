//! Timing precision and queueing of the simulator, measured by a client over real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_support;

use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use serde_json::json;
use sim_support::{client, metric, ms, stream};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn abs_diff(a: Duration, b: Duration) -> Duration {
    a.abs_diff(b)
}

/// Opens `n` pooled connections first, so that TTFT does not include TCP connects.
async fn warm_connections(c: &reqwest::Client, base: &str, n: usize) {
    let url = format!("{base}/health");
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (c, url) = (c.clone(), url.clone());
            tokio::spawn(async move { c.get(&url).send().await.unwrap().bytes().await.unwrap() })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

/// Checks `value` against `target ± tol`; the message names what was measured.
fn within(what: &str, value: Duration, target_ms: u64, tol_ms: u64) -> Result<(), String> {
    let d = abs_diff(value, Duration::from_millis(target_ms));
    if d <= Duration::from_millis(tol_ms) {
        Ok(())
    } else {
        Err(format!(
            "{what} {value:?}, expected {target_ms} ms ± {tol_ms} ms"
        ))
    }
}

/// `streams` concurrent chat streams of 64 tokens (`rounds` requests each, one after the
/// other): median TTFT within 5 ms of 200 ms and mean ITL within 2 ms of 20 ms as the client
/// sees them, and the same by the server's ground truth.
async fn precision_attempt(streams: usize, rounds: usize) -> Result<(), String> {
    let cfg = SimConfig {
        ttft_base: ms(200),
        itl_base: ms(20),
        max_num_seqs: 512,
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let c = client();
    warm_connections(&c, &sim.base_url(), streams).await;
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 64, "ignore_eos": true, "stream": true});
    // Streams start 1 ms apart (as a closed loop ramps up), then all run at once.
    let tasks: Vec<_> = (0..streams)
        .map(|i| {
            let (c, url, body) = (c.clone(), url.clone(), body.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(i as u64)).await;
                let mut out = Vec::new();
                for _ in 0..rounds {
                    out.push(stream(&c, &url, &body).await);
                }
                out
            })
        })
        .collect();
    let mut ttfts = Vec::new();
    let mut itls = Vec::new();
    for t in tasks {
        for s in t.await.unwrap() {
            assert_eq!(s.status, 200);
            assert_eq!(s.content_events().len(), 64);
            ttfts.push(s.ttft().unwrap());
            itls.push(s.itl_mean().unwrap());
        }
    }
    let truth = sim.truth();
    sim.shutdown().await;
    assert_eq!(truth.len(), streams * rounds);
    assert!(truth.iter().all(|r| r.finished && r.tokens_sent == 64));
    let server_ttft: Vec<Duration> = truth
        .iter()
        .map(|r| Duration::from_micros(r.first_token_us.unwrap() - r.arrival_us))
        .collect();
    let server_itl = truth
        .iter()
        .map(|r| Duration::from_micros(r.last_token_us.unwrap() - r.first_token_us.unwrap()) / 63)
        .sum::<Duration>()
        / truth.len() as u32;
    let itl = itls.iter().sum::<Duration>() / itls.len() as u32;
    within("client ttft p50", median(ttfts), 200, 5)?;
    within("client itl mean", itl, 20, 2)?;
    within("server ttft p50", median(server_ttft), 200, 5)?;
    within("server itl mean", server_itl, 20, 2)
}

/// Up to three attempts: a shared 2-core machine under other load can delay one attempt's
/// timers by more than the tolerance; the simulator must meet it in at least one.
async fn precision(streams: usize, rounds: usize) {
    let mut errors = Vec::new();
    for _ in 0..3 {
        match precision_attempt(streams, rounds).await {
            Ok(()) => return,
            Err(e) => {
                eprintln!("{streams} streams: {e}");
                errors.push(e);
            }
        }
    }
    panic!("{streams} streams: timing off in every attempt: {errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precision_one_stream() {
    // Three requests one after the other (concurrency 1), so one OS hiccup is not the median.
    precision(1, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precision_64_streams() {
    precision(64, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn precision_256_streams() {
    precision(256, 1).await;
}

/// max_num_seqs = 4 and 16 clients: 12 wait, and TTFT grows in waves of 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queueing_with_max_num_seqs() {
    let cfg = SimConfig {
        ttft_base: ms(50),
        itl_base: ms(5),
        max_num_seqs: 4,
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let base = sim.base_url();
    let url = format!("{base}/v1/chat/completions");
    let c = client();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 20, "ignore_eos": true, "stream": true});
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (c, url, body) = (c.clone(), url.clone(), body.clone());
            tokio::spawn(async move { stream(&c, &url, &body).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(metric(&c, &base, "vllm:num_requests_running").await, 4.0);
    assert_eq!(metric(&c, &base, "vllm:num_requests_waiting").await, 12.0);
    let mut ttfts = Vec::new();
    for t in tasks {
        ttfts.push(t.await.unwrap().ttft().unwrap());
    }
    ttfts.sort();
    // One generation takes 50 ms + 19 × 5 ms = 145 ms; wave w starts after w of them.
    for (i, t) in ttfts.iter().enumerate() {
        let wave = (i / 4) as u32;
        let expect = Duration::from_millis(50) + Duration::from_millis(145) * wave;
        assert!(
            abs_diff(*t, expect) < Duration::from_millis(25),
            "request {i}: ttft {t:?}, expected {expect:?}"
        );
    }
    let waited = sim
        .truth()
        .iter()
        .filter(|r| r.admitted_us.unwrap() - r.arrival_us > 100_000)
        .count();
    assert_eq!(waited, 12);
    assert_eq!(metric(&c, &base, "vllm:num_requests_waiting").await, 0.0);
    sim.shutdown().await;
}

/// Past the knee each running sequence adds `itl_slope`: 6 streams, knee 2, slope 1 ms →
/// 2 ms + 4 × 1 ms = 6 ms per token (server truth).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn itl_grows_past_the_knee() {
    let cfg = SimConfig {
        ttft_base: ms(20),
        itl_base: ms(2),
        itl_knee: 2,
        itl_slope: ms(1),
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let url = format!("{}/v1/completions", sim.base_url());
    let c = client();
    let body =
        json!({"model": "m", "prompt": "x", "max_tokens": 40, "ignore_eos": true, "stream": true});
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let (c, url, body) = (c.clone(), url.clone(), body.clone());
            tokio::spawn(async move { stream(&c, &url, &body).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let truth = sim.truth();
    let mean_us = truth
        .iter()
        .map(|r| (r.last_token_us.unwrap() - r.first_token_us.unwrap()) / 39)
        .sum::<u64>()
        / truth.len() as u64;
    assert!(mean_us.abs_diff(6_000) < 1_000, "itl {mean_us}us");
    sim.shutdown().await;
}

/// Prefill time counts only uncached prompt tokens: 1,000 tokens at 10,000 tokens/s add
/// 100 ms the first time, less than 1 ms once 992 of them are cached.
#[tokio::test]
async fn prefill_time_counts_uncached_tokens() {
    let cfg = SimConfig {
        ttft_base: ms(10),
        itl_base: ms(1),
        prefill_tokens_per_s: 10_000.0,
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let url = format!("{}/v1/completions", sim.base_url());
    let c = client();
    let ids: Vec<u32> = (0..1000).collect();
    let body =
        json!({"model": "m", "prompt": ids, "max_tokens": 2, "ignore_eos": true, "stream": true});
    stream(&c, &url, &body).await;
    stream(&c, &url, &body).await;
    let truth = sim.truth();
    let ttft: Vec<u64> = truth
        .iter()
        .map(|r| r.first_token_us.unwrap() - r.arrival_us)
        .collect();
    assert!(ttft[0].abs_diff(110_000) < 5_000, "cold ttft {}us", ttft[0]);
    assert!(ttft[1].abs_diff(10_800) < 5_000, "warm ttft {}us", ttft[1]);
    assert_eq!(truth[1].cached_tokens, 992);
    sim.shutdown().await;
}

/// A client that goes away frees its batch slot at once.
#[tokio::test]
async fn disconnect_frees_the_slot() {
    let cfg = SimConfig {
        ttft_base: ms(5),
        itl_base: ms(50),
        max_num_seqs: 1,
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let base = sim.base_url();
    let url = format!("{base}/v1/completions");
    let c = client();
    let long = json!({"model": "m", "prompt": "x", "max_tokens": 1000, "ignore_eos": true, "stream": true});
    let mut r = c
        .post(&url)
        .header("content-type", "application/json")
        .body(long.to_string())
        .send()
        .await
        .unwrap();
    r.chunk().await.unwrap();
    drop(r);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(metric(&c, &base, "vllm:num_requests_running").await, 0.0);
    let short =
        json!({"model": "m", "prompt": "x", "max_tokens": 2, "ignore_eos": true, "stream": true});
    let s = stream(&c, &url, &short).await;
    assert!(
        s.ttft().unwrap() < Duration::from_millis(40),
        "{:?} {:?}",
        s.ttft(),
        sim.truth()
    );
    let truth = sim.truth();
    assert!(!truth[0].finished);
    assert!(truth[1].finished);
    sim.shutdown().await;
}
