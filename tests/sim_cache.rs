//! The simulator's prefix cache: cached_tokens in usage, /metrics counters, reset.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_support;

use perfplan::sim::{SimConfig, SimServer};
use serde_json::{json, Value};
use sim_support::{client, metric, post};

fn fast() -> SimConfig {
    SimConfig {
        ttft_base: sim_support::ms(1),
        itl_base: sim_support::ms(0),
        ..SimConfig::default()
    }
}

fn prompt_ids(n: u32, salt: u32) -> Value {
    json!((0..n)
        .map(|i| (i * 31 + salt) % 50_000)
        .collect::<Vec<u32>>())
}

fn cached(v: &Value) -> u64 {
    v["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap()
}

/// The same 1,024-token prompt twice: the second reports the block-aligned shared length
/// (vLLM computes at least the last token: (1024 − 1) / 16 full blocks = 1,008 tokens), and the
/// /metrics counters equal the sums of the usage fields.
#[tokio::test]
async fn repeated_prompt_is_cached_and_metrics_agree() {
    let sim = SimServer::start(fast()).await.unwrap();
    let base = sim.base_url();
    let c = client();
    let url = format!("{base}/v1/completions");
    let body =
        json!({"model": "m", "prompt": prompt_ids(1024, 0), "max_tokens": 4, "ignore_eos": true});
    let (s1, a) = post(&c, &url, &body).await;
    let (s2, b) = post(&c, &url, &body).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(a["usage"]["prompt_tokens"], 1024);
    assert_eq!(cached(&a), 0);
    assert_eq!(cached(&b), 1008);
    // A longer prompt sharing the first 1,024 tokens hits all 64 blocks.
    let longer = json!({"model": "m", "prompt": prompt_ids(1100, 0), "max_tokens": 4});
    let (_, l) = post(&c, &url, &longer).await;
    assert_eq!(cached(&l), 1024);
    let prompt_sum = 1024 + 1024 + 1100;
    let hit_sum = cached(&a) + cached(&b) + cached(&l);
    assert_eq!(
        metric(&c, &base, "vllm:prefix_cache_queries_total").await,
        prompt_sum as f64
    );
    assert_eq!(
        metric(&c, &base, "vllm:prefix_cache_hits_total").await,
        hit_sum as f64
    );
    assert_eq!(
        metric(&c, &base, "vllm:prompt_tokens_total").await,
        prompt_sum as f64
    );
    assert_eq!(
        metric(&c, &base, "vllm:generation_tokens_total").await,
        12.0
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn no_prefix_cache_reports_zero() {
    let sim = SimServer::start(SimConfig {
        prefix_cache: false,
        ..fast()
    })
    .await
    .unwrap();
    let c = client();
    let url = format!("{}/v1/completions", sim.base_url());
    let body = json!({"model": "m", "prompt": prompt_ids(1024, 1), "max_tokens": 2});
    for _ in 0..2 {
        let (_, v) = post(&c, &url, &body).await;
        assert_eq!(cached(&v), 0);
    }
    assert_eq!(
        metric(&c, &sim.base_url(), "vllm:prefix_cache_hits_total").await,
        0.0
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn reset_prefix_cache_forgets_blocks() {
    let sim = SimServer::start(fast()).await.unwrap();
    let c = client();
    let url = format!("{}/v1/completions", sim.base_url());
    let body = json!({"model": "m", "prompt": prompt_ids(100, 2), "max_tokens": 2});
    post(&c, &url, &body).await;
    let r = c
        .post(format!("{}/reset_prefix_cache", sim.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let (_, v) = post(&c, &url, &body).await;
    assert_eq!(cached(&v), 0);
    let (_, v) = post(&c, &url, &body).await;
    assert_eq!(cached(&v), 96);
    sim.shutdown().await;
}

/// Chat text prompts are cached too (same messages, same tokens), and streamed usage carries it.
#[tokio::test]
async fn chat_text_prompt_is_cached() {
    let sim = SimServer::start(fast()).await.unwrap();
    let c = client();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let text = "word ".repeat(300);
    let body = json!({"model": "m", "messages": [{"role": "user", "content": text}],
        "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}});
    let first = sim_support::stream(&c, &url, &body).await;
    let second = sim_support::stream(&c, &url, &body).await;
    let usage = |s: &sim_support::Streamed| {
        s.events
            .iter()
            .filter_map(|e| e.json())
            .find(|v| v.get("usage").is_some())
            .unwrap()["usage"]
            .clone()
    };
    // 300 words + user marker + end marker + reply marker.
    assert_eq!(usage(&first)["prompt_tokens"], 303);
    assert_eq!(usage(&first)["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(
        usage(&second)["prompt_tokens_details"]["cached_tokens"],
        288
    );
    sim.shutdown().await;
}
