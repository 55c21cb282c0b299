//! Non-streamed answers: the whole JSON body after the generation's last token is due, and the
//! bodies of embeddings and rerank requests. Knows nothing about routing.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::faults::Fault;
use super::format::{response_usage_json, usage_json, words};
use super::generate::Generation;
use super::request::{Api, ApiError};
use super::stream::{flushed_then_dropped, message_item, response_object};
use super::UsageMode;

/// An OpenAI-style error answer.
pub(crate) fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, axum::Json(e.body())).into_response()
}

/// A JSON answer with status 200.
pub(crate) fn json_response(v: &Value) -> Response {
    let mut r = Response::new(Body::from(v.to_string()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Waits out the generation, then answers the whole body (with the body faults).
pub(crate) async fn complete(mut gen: Generation) -> Response {
    if !gen.admit().await {
        return error_response(&ApiError {
            status: 503,
            message: "server is shutting down".into(),
            kind: "service_unavailable",
            param: None,
        });
    }
    if gen.fault == Fault::Stall {
        gen.release();
        gen.st.until_closed().await;
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let first = gen.next;
    let itl = gen.itl();
    super::generate::sleep_until(first).await;
    let last = first + itl * gen.out_len.saturating_sub(1);
    super::generate::sleep_until(last).await;
    let out_len = gen.out_len;
    gen.sent = 0;
    gen.note_sent(out_len, Instant::now());
    let text = body_json(&gen).to_string();
    match gen.fault {
        Fault::Drop => {
            gen.release();
            let half = Bytes::from(text.into_bytes());
            let half = half.slice(..half.len() / 2);
            let half = futures_util::stream::once(async { Ok::<_, std::io::Error>(half) });
            let drop = futures_util::stream::once(async { Err(flushed_then_dropped().await) });
            Response::new(Body::from_stream(half.chain(drop)))
        }
        Fault::Malformed => {
            gen.finished();
            let cut = text.len() * 2 / 3;
            let mut r = json_response(&Value::Null);
            *r.body_mut() = Body::from(text.as_bytes()[..cut].to_vec());
            r
        }
        _ => {
            gen.finished();
            let mut r = json_response(&Value::Null);
            *r.body_mut() = Body::from(text);
            r
        }
    }
}

/// The non-streamed body of chat, completions or responses.
fn body_json(gen: &Generation) -> Value {
    let u = gen.usage();
    let with_usage = gen.st.cfg.usage != UsageMode::Never;
    let (empty, thought) = (&gen.fmt.empty, gen.reasoning_len());
    let choices: Vec<Value> = (0..gen.job.choices())
        .map(|i| {
            let offset = gen.offset + u64::from(i) * 13;
            let text = words(offset, (thought, gen.out_len), empty);
            match gen.job.api {
                Api::Chat => {
                    let mut message =
                        json!({"role": "assistant", "content": text, "tool_calls": []});
                    if let Some(calls) = &gen.tool_calls {
                        message["content"] = Value::Null;
                        message["tool_calls"] = super::tools::message_calls(calls);
                    }
                    if thought > 0 {
                        message["reasoning_content"] = json!(words(offset, (0, thought), empty));
                    }
                    json!({"index": i, "message": message,
                        "logprobs": null, "finish_reason": gen.finish, "stop_reason": null})
                }
                _ => json!({"index": i, "text": text, "logprobs": null,
                    "finish_reason": gen.finish, "stop_reason": null}),
            }
        })
        .collect();
    match gen.job.api {
        Api::Responses if gen.tool_calls.is_some() => {
            let calls = gen.tool_calls.as_deref().unwrap_or_default();
            let output = super::tools::response_items(calls, &gen.fmt.id);
            response_object(
                gen,
                "completed",
                output,
                with_usage.then(|| response_usage_json(u)),
            )
        }
        Api::Responses => {
            let text = words(gen.offset, (0, gen.out_len), empty);
            let item = message_item(gen, &text, "completed");
            let usage = with_usage.then(|| response_usage_json(u));
            response_object(gen, "completed", vec![item], usage)
        }
        api => {
            let object = if api == Api::Chat {
                "chat.completion"
            } else {
                "text_completion"
            };
            let mut v = json!({"id": gen.fmt.id, "object": object, "created": gen.fmt.created,
                "model": gen.fmt.model, "choices": choices});
            if with_usage {
                v["usage"] = usage_json(u, true);
            }
            v
        }
    }
}

/// A deterministic unit vector of `dim` numbers for a token sequence.
pub(crate) fn embedding(tokens: &[u32], dim: usize) -> Vec<f32> {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ tokens.len() as u64;
    for &t in tokens {
        h = (h ^ u64::from(t)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut v: Vec<f32> = (0..dim)
        .map(|_| {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            ((h >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// Relevance of a document to a query, in [0, 1), deterministic.
pub(crate) fn relevance(query: &[u32], doc: &[u32]) -> f64 {
    let q: std::collections::HashSet<u32> = query.iter().copied().collect();
    let shared = doc.iter().filter(|t| q.contains(t)).count() as f64;
    let e = embedding(doc, 4);
    (shared / (doc.len().max(1) as f64) * 0.8 + f64::from(e[0].abs()) * 0.2).min(0.999)
}

/// Time a batch of `tokens` prompt tokens takes to encode: `ttft_base` plus prefill.
pub(crate) fn encode_time(ttft_base: Duration, rate: f64, tokens: u64) -> Duration {
    if rate > 0.0 {
        ttft_base.saturating_add(crate::units::duration_from_secs(tokens as f64 / rate))
    } else {
        ttft_base
    }
}
