//! Fault injection at its configured rates, and rejected fields.

mod sim_support;

use std::collections::BTreeMap;
use std::time::Duration;

use perfplan::sim::{Fault, SimConfig, SimServer};
use serde_json::json;
use sim_support::{client, ms, post, stream_with_timeout};

/// Every fault kind at 10 %: the deck holds 10 requests, so 30 requests hold exactly 3 of
/// each, and the client sees each as its own kind of failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_kind_at_its_rate() {
    let cfg = SimConfig {
        ttft_base: ms(1),
        itl_base: ms(1),
        fault_http_429: 0.1,
        fault_http_500: 0.1,
        fault_http_503: 0.1,
        fault_drop: 0.1,
        fault_stall: 0.1,
        fault_malformed: 0.1,
        fault_slow_headers: 0.1,
        fault_headers_delay: ms(300),
        seed: 7,
        ..SimConfig::default()
    };
    let sim = SimServer::start(cfg).await.unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let c = client();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 8, "ignore_eos": true, "stream": true});
    let tasks: Vec<_> = (0..30)
        .map(|_| {
            let (c, url, body) = (c.clone(), url.clone(), body.clone());
            tokio::spawn(async move {
                stream_with_timeout(&c, &url, &body, Duration::from_millis(1500)).await
            })
        })
        .collect();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for t in tasks {
        let s = t.await.unwrap();
        let kind = match s.status {
            429 => "429",
            500 => "500",
            503 => "503",
            _ if s.error.as_ref().is_some_and(reqwest::Error::is_timeout) => "stall",
            _ if s.error.is_some() => "drop",
            _ if s
                .events
                .iter()
                .any(|e| e.data != "[DONE]" && e.json().is_none()) =>
            {
                "malformed"
            }
            _ if s.headers_at - s.sent >= Duration::from_millis(300) => "slow_headers",
            _ => "ok",
        };
        if kind == "ok" || kind == "slow_headers" || kind == "malformed" {
            assert_eq!(s.content_events().len(), 8, "{kind}");
            assert_eq!(s.events.last().unwrap().data, "[DONE]");
        }
        *seen.entry(kind).or_default() += 1;
    }
    let expected: BTreeMap<&str, usize> = [
        ("429", 3),
        ("500", 3),
        ("503", 3),
        ("drop", 3),
        ("stall", 3),
        ("malformed", 3),
        ("slow_headers", 3),
        ("ok", 9),
    ]
    .into_iter()
    .collect();
    assert_eq!(seen, expected);
    let truth = sim.truth();
    let count = |f| truth.iter().filter(|r| r.fault == f).count();
    assert_eq!(count(Fault::Drop), 3);
    assert_eq!(count(Fault::Http429), 3);
    assert!(truth
        .iter()
        .filter(|r| r.fault == Fault::Drop)
        .all(|r| !r.finished));
    sim.shutdown().await;
}

/// The same seed deals the same faults to the same request numbers.
#[tokio::test]
async fn faults_are_deterministic_per_seed() {
    let cfg = SimConfig {
        ttft_base: ms(0),
        itl_base: ms(0),
        fault_http_500: 0.25,
        seed: 3,
        ..SimConfig::default()
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let sim = SimServer::start(cfg.clone()).await.unwrap();
        let c = client();
        let url = format!("{}/v1/completions", sim.base_url());
        let mut statuses = Vec::new();
        for _ in 0..8 {
            let (s, _) = post(
                &c,
                &url,
                &json!({"model": "m", "prompt": "x", "max_tokens": 1}),
            )
            .await;
            statuses.push(s);
        }
        assert_eq!(statuses.iter().filter(|&&s| s == 500).count(), 2);
        runs.push(statuses);
        sim.shutdown().await;
    }
    assert_eq!(runs[0], runs[1]);
}

#[tokio::test]
async fn rejected_field_is_a_400_naming_it() {
    let sim = SimServer::start(SimConfig {
        reject_fields: vec!["seed".into(), "min_tokens".into()],
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let c = client();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let body =
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "min_tokens": 3});
    let (status, v) = post(&c, &url, &body).await;
    assert_eq!(status, 400);
    assert_eq!(v["error"]["param"], "min_tokens");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("min_tokens"));
    let ok =
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2});
    assert_eq!(post(&c, &url, &ok).await.0, 200);
    sim.shutdown().await;
}
