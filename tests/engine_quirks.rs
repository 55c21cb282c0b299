//! Real-server quirks (llama.cpp, vLLM) served by a tiny canned HTTP server on
//! 127.0.0.1:0: none may crash a run or silently skew a metric.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kept_support;
use kept_support::run_kept;
use std::time::Duration;

use bytes::Bytes;
use perfplan::api::ApiKind;
use perfplan::engine::{
    CancelHandle, Endpoint, Load, PreparedRequest, RunConfig, Target, Timeouts, VecSource,
};
use perfplan::metrics::{summarize, SummaryOptions};
use perfplan::record::{Outcome, Phase, RequestRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SSE: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn chunk(content: &str) -> String {
    format!("data: {{\"choices\": [{{\"index\": 0, \"delta\": {{\"content\": \"{content}\"}}, \"finish_reason\": null}}]}}\n\n")
}

/// The canned response for a request whose body contains `scenario`.
fn respond(request: &str) -> String {
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let finish =
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n";
    if request.contains("done_no_finish") {
        format!("{SSE}{role}{}{}data: [DONE]\n\n", chunk("a"), chunk("b"))
    } else if request.contains("ping_crlf") {
        let body = format!(
            ": ping - 2026-11-29 07:57:57\n\n{role}{}{finish}data: [DONE]\n\n",
            chunk("x")
        );
        format!("{SSE}{}", body.replace('\n', "\r\n"))
    } else if request.contains("midstream_error") {
        let err = "data: {\"error\": {\"object\": \"error\", \"message\": \"engine died\", \"code\": 500}}\n\n";
        format!("{SSE}{role}{}{err}data: [DONE]\n\n", chunk("a"))
    } else if request.contains("json_when_streamed") {
        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#;
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
    } else if request.contains("validation_500") {
        let body = r#"{"error":{"message":"7 validation errors: Input should be a valid string","type":"internal_server_error"}}"#;
        format!("HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
    } else {
        // closed early: content, then the connection ends without finish or [DONE].
        format!("{SSE}{role}{}", chunk("a"))
    }
}

/// Serves canned responses; one request per connection.
async fn canned_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = [0u8; 4096];
                loop {
                    let n = sock.read(&mut tmp).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&tmp[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(h) = text.find("\r\n\r\n") {
                        let len = text[..h]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap())
                            })
                            .unwrap_or(0);
                        if buf.len() >= h + 4 + len {
                            let _ = sock.write_all(respond(&text).as_bytes()).await;
                            let _ = sock.shutdown().await;
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// Runs `scenario` through both HTTP clients; they must agree on everything but timing.
async fn one(scenario: &str) -> RequestRecord {
    let lean = one_with(scenario, false).await;
    let other = one_with(scenario, true).await;
    assert_eq!(
        (
            lean.outcome,
            lean.http_status,
            &lean.finish_reason,
            &lean.output_text,
            lean.usage,
            lean.content_times.len()
        ),
        (
            other.outcome,
            other.http_status,
            &other.finish_reason,
            &other.output_text,
            other.usage,
            other.content_times.len()
        ),
        "{scenario}: lean client and reqwest disagree: {:?} / {:?}",
        lean.error,
        other.error
    );
    lean
}

async fn one_with(scenario: &str, force_reqwest: bool) -> RequestRecord {
    let base_url = canned_server().await;
    let target = Target {
        base_url,
        force_reqwest,
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            read: Duration::from_secs(2),
            total: None,
        },
        ..Target::default()
    };
    let ep = Endpoint::new(&target, 1).unwrap();
    let body = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"{scenario}"}}],"stream":true}}"#
    );
    let req = PreparedRequest {
        item: 0,
        phase: Phase::Measured,
        kind: ApiKind::Chat,
        path: ApiKind::Chat.path().into(),
        body: Bytes::from(body),
        stream: true,
        client_input_tokens: Some(4),
        max_output_tokens: None,
        running_usage: false,
        headers: Vec::new(),
        session: None,
        class: None,
        cancel_after: None,
        tools: None,
        check: None,
    };
    let cfg = RunConfig {
        load: Load::Closed { concurrency: 1 },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let out = run_kept(
        &ep,
        &mut VecSource::new(vec![req]),
        &cfg,
        &CancelHandle::new(),
        |_: &RequestRecord| {},
    )
    .await
    .unwrap();
    assert_eq!(out.records.len(), 1);
    out.records.into_iter().next().unwrap()
}

#[tokio::test]
async fn done_without_finish_reason_is_ok_but_truncated_and_estimated() {
    let mut r = one("done_no_finish").await;
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.finish_reason, None);
    assert_eq!(r.output_text, "ab");
    assert_eq!(r.content_times.len(), 2);
    assert_eq!(r.usage.completion_tokens, None);
    r.client_output_tokens = Some(2); // as the runner's tokenizer would count
    let s = summarize(&[r], &SummaryOptions::default());
    assert_eq!(
        (s.truncated, s.estimated_output, s.estimated_input),
        (1, 1, 1)
    );
    assert!(s.values["tpot_mean"].is_some());
}

#[tokio::test]
async fn comments_and_crlf_are_skipped() {
    let r = one("ping_crlf").await;
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert_eq!(r.output_text, "x");
    assert!(r.first_chunk.is_some() && r.last_chunk >= r.first_chunk);
}

#[tokio::test]
async fn error_object_mid_stream_is_a_server_error_with_its_message() {
    let r = one("midstream_error").await;
    assert_eq!(r.outcome, Outcome::ServerError);
    assert_eq!(r.error.as_deref(), Some("engine died (code 500)"));
    assert_eq!(r.content_times.len(), 1);
}

#[tokio::test]
async fn json_answer_to_a_streamed_request_is_read_as_a_body() {
    let r = one("json_when_streamed").await;
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.output_text, "Paris");
    assert_eq!(r.usage.completion_tokens, Some(1));
}

#[tokio::test]
async fn validation_error_as_http_500_keeps_status_and_excerpt() {
    let r = one("validation_500").await;
    assert_eq!(r.outcome, Outcome::Http);
    assert_eq!(r.http_status, Some(500));
    assert_eq!(
        r.error.as_deref(),
        Some("7 validation errors: Input should be a valid string (internal_server_error)")
    );
}

#[tokio::test]
async fn stream_closed_early_is_stream_broken() {
    let r = one("closed_early").await;
    assert_eq!(r.outcome, Outcome::StreamBroken);
    assert_eq!(r.content_times.len(), 1);
}

#[tokio::test]
async fn refused_connection_is_a_connect_failure() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    for force_reqwest in [false, true] {
        let target = Target {
            base_url: format!("http://{addr}"),
            force_reqwest,
            ..Target::default()
        };
        refused(&Endpoint::new(&target, 1).unwrap()).await;
    }
}

async fn refused(ep: &Endpoint) {
    let req = PreparedRequest {
        item: 0,
        phase: Phase::Measured,
        kind: ApiKind::Chat,
        path: ApiKind::Chat.path().into(),
        body: Bytes::from_static(b"{}"),
        stream: true,
        client_input_tokens: None,
        max_output_tokens: None,
        running_usage: false,
        headers: Vec::new(),
        session: None,
        class: None,
        cancel_after: None,
        tools: None,
        check: None,
    };
    let cfg = RunConfig {
        load: Load::Closed { concurrency: 1 },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let out = run_kept(
        ep,
        &mut VecSource::new(vec![req.clone(), req]),
        &cfg,
        &CancelHandle::new(),
        |_: &RequestRecord| {},
    )
    .await
    .unwrap();
    assert_eq!(out.records.len(), 2);
    assert!(out
        .records
        .iter()
        .all(|r| r.outcome == Outcome::Connect && r.error.is_some()));
    let s = summarize(&out.records, &SummaryOptions::default());
    assert_eq!(s.failures.get("connect"), Some(&2));
    assert_eq!(s.values["success_ratio"], Some(0.0));
}
