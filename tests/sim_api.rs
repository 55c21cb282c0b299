//! The simulator's wire formats: streamed chunks for chat, completions and responses, usage
//! modes, non-streamed bodies, embeddings, rerank, models, received bodies and truth.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod sim_support;

use perfplan::sim::{SimConfig, SimServer, UsageMode};
use serde_json::{json, Value};
use sim_support::{client, content_of, get_json, ms, post, stream, Streamed};

fn fast() -> SimConfig {
    SimConfig {
        ttft_base: ms(1),
        itl_base: ms(0),
        ..SimConfig::default()
    }
}

fn chat(extra: Value) -> Value {
    let mut v = json!({"model": "m", "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 5, "ignore_eos": true, "stream": true});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn usage_events(s: &Streamed) -> Vec<Value> {
    s.events
        .iter()
        .filter_map(|e| e.json())
        .filter(|v| v.get("usage").is_some_and(|u| !u.is_null()))
        .collect()
}

#[tokio::test]
async fn chat_stream_shape() {
    let sim = SimServer::start(fast()).await.unwrap();
    let c = client();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let s = stream(
        &c,
        &url,
        &chat(json!({"stream_options": {"include_usage": true}})),
    )
    .await;
    assert_eq!(s.status, 200);
    let json: Vec<Value> = s.events.iter().filter_map(|e| e.json()).collect();
    // role chunk, 5 content chunks, usage chunk, then [DONE]
    assert_eq!(json.len(), 7);
    assert_eq!(json[0]["object"], "chat.completion.chunk");
    assert_eq!(json[0]["choices"][0]["delta"]["role"], "assistant");
    for (i, v) in json[1..6].iter().enumerate() {
        let finish = &v["choices"][0]["finish_reason"];
        assert_eq!(finish.is_null(), i < 4, "chunk {i}: {v}");
        assert_eq!(content_of(v).split_whitespace().count(), 1);
    }
    assert_eq!(json[5]["choices"][0]["finish_reason"], "length");
    assert_eq!(json[6]["choices"], json!([]));
    let u = &json[6]["usage"];
    assert_eq!(u["completion_tokens"], 5);
    assert_eq!(u["prompt_tokens"], 4); // "hello" + user marker + end marker + reply marker
    assert_eq!(u["total_tokens"], 9);
    assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(s.events.last().unwrap().data, "[DONE]");
    let ids: Vec<&Value> = json.iter().map(|v| &v["id"]).collect();
    assert!(ids.iter().all(|id| *id == ids[0]));
    sim.shutdown().await;
}

#[tokio::test]
async fn completions_stream_with_chunks_of_several_tokens_and_prompt_lists() {
    let sim = SimServer::start(SimConfig {
        tokens_per_chunk: 4,
        ..fast()
    })
    .await
    .unwrap();
    let c = client();
    let url = format!("{}/v1/completions", sim.base_url());
    let body = json!({"model": "m", "prompt": ["one two", [1, 2, 3]], "max_tokens": 10,
        "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}});
    let s = stream(&c, &url, &body).await;
    let json: Vec<Value> = s.events.iter().filter_map(|e| e.json()).collect();
    for index in 0..2 {
        let sizes: Vec<usize> = json
            .iter()
            .filter(|v| v["choices"].as_array().is_some_and(|a| !a.is_empty()))
            .filter(|v| v["choices"][0]["index"] == index)
            .map(|v| content_of(v).split_whitespace().count())
            .collect();
        assert_eq!(sizes, vec![4, 4, 2]);
    }
    assert_eq!(json[0]["object"], "text_completion");
    let usage = &usage_events(&s)[0]["usage"];
    assert_eq!(usage["prompt_tokens"], 5);
    assert_eq!(usage["completion_tokens"], 20);
    sim.shutdown().await;
}

#[tokio::test]
async fn responses_stream_events() {
    let sim = SimServer::start(fast()).await.unwrap();
    let c = client();
    let url = format!("{}/v1/responses", sim.base_url());
    let body =
        json!({"model": "m", "input": "hello there", "max_output_tokens": 3, "stream": true});
    let s = stream(&c, &url, &body).await;
    let kinds: Vec<String> = s
        .events
        .iter()
        .map(|e| e.json().unwrap()["type"].as_str().unwrap().to_string())
        .collect();
    let expected = [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ];
    assert_eq!(kinds, expected);
    let done = s.last_json().unwrap();
    let usage = &done["response"]["usage"];
    assert_eq!(usage["output_tokens"], 3);
    assert_eq!(usage["input_tokens"], 5);
    let text: String = s
        .content_events()
        .iter()
        .map(|e| content_of(&e.json().unwrap()))
        .collect();
    assert_eq!(
        done["response"]["output"][0]["content"][0]["text"],
        text.as_str()
    );
    let seq: Vec<u64> = s
        .events
        .iter()
        .map(|e| e.json().unwrap()["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seq, (0..11).collect::<Vec<u64>>());
    sim.shutdown().await;
}

#[tokio::test]
async fn usage_modes() {
    let c = client();
    let cases = [
        (UsageMode::Request, json!({}), 0),
        (
            UsageMode::Request,
            json!({"stream_options": {"include_usage": true}}),
            1,
        ),
        (UsageMode::Always, json!({}), 1),
        (
            UsageMode::Never,
            json!({"stream_options": {"include_usage": true}}),
            0,
        ),
    ];
    for (mode, extra, n) in cases {
        let sim = SimServer::start(SimConfig {
            usage: mode,
            ..fast()
        })
        .await
        .unwrap();
        let url = format!("{}/v1/chat/completions", sim.base_url());
        let s = stream(&c, &url, &chat(extra.clone())).await;
        assert_eq!(usage_events(&s).len(), n, "{mode:?} {extra}");
        let (_, body) = post(&c, &url, &chat(json!({"stream": false}))).await;
        assert_eq!(
            body.get("usage").is_some(),
            mode != UsageMode::Never,
            "{mode:?}"
        );
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn omit_cached_tokens_only_in_streams() {
    let sim = SimServer::start(SimConfig {
        omit_cached_tokens: true,
        ..fast()
    })
    .await
    .unwrap();
    let c = client();
    let url = format!("{}/v1/completions", sim.base_url());
    let body = json!({"model": "m", "prompt": "a b c", "max_tokens": 2, "stream": true,
        "stream_options": {"include_usage": true}});
    let s = stream(&c, &url, &body).await;
    let u = &usage_events(&s)[0]["usage"];
    assert_eq!(u["prompt_tokens"], 3);
    assert!(u.get("prompt_tokens_details").is_none());
    let (_, v) = post(
        &c,
        &url,
        &json!({"model": "m", "prompt": "a b c", "max_tokens": 2}),
    )
    .await;
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn non_streamed_bodies_and_lengths() {
    let sim = SimServer::start(SimConfig {
        natural_output_mean: 8,
        ..fast()
    })
    .await
    .unwrap();
    let c = client();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let (status, v) = post(
        &c,
        &url,
        &chat(json!({"stream": false, "max_completion_tokens": 7})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["usage"]["completion_tokens"], 7);
    let text = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(text.split_whitespace().count(), 7);
    // Without ignore_eos: a natural length, capped by max_tokens.
    for _ in 0..20 {
        let (_, v) = post(
            &c,
            &url,
            &chat(json!({"stream": false, "ignore_eos": false, "max_tokens": 10})),
        )
        .await;
        let n = v["usage"]["completion_tokens"].as_u64().unwrap();
        let finish = v["choices"][0]["finish_reason"].as_str().unwrap();
        assert!((1..=10).contains(&n));
        assert_eq!(finish == "length", n == 10, "{n} {finish}");
    }
    let (_, v) = post(&c, &format!("{}/v1/responses", sim.base_url()),
        &json!({"model": "m", "input": [{"role": "user", "content": "hi"}], "max_output_tokens": 4})).await;
    assert_eq!(v["object"], "response");
    assert_eq!(v["usage"]["output_tokens"], 4);
    sim.shutdown().await;
}

#[tokio::test]
async fn embeddings_rerank_models_health() {
    let sim = SimServer::start(SimConfig {
        embedding_dim: 16,
        models: vec!["m".into()],
        ..fast()
    })
    .await
    .unwrap();
    let c = client();
    let base = sim.base_url();
    let (s, v) = post(
        &c,
        &format!("{base}/v1/embeddings"),
        &json!({"model": "m", "input": ["a b", "c"]}),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 16);
    assert_eq!(v["usage"]["prompt_tokens"], 3);
    let (s, v) = post(&c, &format!("{base}/v1/rerank"),
        &json!({"model": "m", "query": "cat food", "documents": ["dog", "cat food brands", "car"], "top_n": 2})).await;
    assert_eq!(s, 200);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["index"], 1);
    let (s, v) = post(
        &c,
        &format!("{base}/v1/chat/completions"),
        &json!({"model": "other", "messages": []}),
    )
    .await;
    assert_eq!(s, 404);
    assert_eq!(v["error"]["param"], "model");
    let models = get_json(&c, &format!("{base}/v1/models")).await;
    assert_eq!(models["data"][0]["id"], "m");
    assert_eq!(
        c.get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let received = sim.received();
    assert_eq!(received.len(), 4);
    assert_eq!(received[0].path, "/v1/embeddings");
    assert_eq!(received[0].body["input"], json!(["a b", "c"]));
    assert_eq!(received[3].method, "GET");
    sim.shutdown().await;
}

#[tokio::test]
async fn truth_endpoint_and_reset() {
    let sim = SimServer::start(fast()).await.unwrap();
    let c = client();
    let base = sim.base_url();
    let url = format!("{base}/v1/chat/completions");
    let resp = c
        .post(&url)
        .header("x-request-id", "abc")
        .header("content-type", "application/json")
        .body(chat(json!({})).to_string())
        .send()
        .await
        .unwrap();
    let id = resp.headers()["x-request-id"].to_str().unwrap().to_string();
    resp.bytes().await.unwrap();
    let t = get_json(&c, &format!("{base}/sim/truth")).await;
    assert!(t["server_start_unix_us"].as_u64().unwrap() > 1_600_000_000_000_000);
    let r = &t["records"][0];
    assert_eq!(r["request_id"], id.as_str());
    assert_eq!(r["client_request_id"], "abc");
    assert_eq!(r["tokens_sent"], 5);
    assert_eq!(r["finished"], true);
    assert!(r["first_token_us"].as_u64().unwrap() >= r["arrival_us"].as_u64().unwrap());
    let t = get_json(&c, &format!("{base}/sim/truth?reset=true")).await;
    assert_eq!(t["records"].as_array().unwrap().len(), 1);
    assert!(sim.truth().is_empty());
    stream(&c, &url, &chat(json!({}))).await;
    assert_eq!(
        c.delete(format!("{base}/sim/truth"))
            .send()
            .await
            .unwrap()
            .status(),
        204
    );
    assert!(sim.truth().is_empty());
    sim.shutdown().await;
}
