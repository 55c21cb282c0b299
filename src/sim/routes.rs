//! HTTP routes of the simulator (axum): reading requests, recording them, dealing faults and
//! handing off to `stream` or `respond`. Knows nothing about plans or the engine.

use crate::hash::mix64 as mix;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use super::faults::Fault;
use super::front::Front;
use super::generate::Generation;
use super::request::{parse_job, texts_tokens, Api, ApiError};
use super::respond::{complete, embedding, encode_time, error_response, json_response, relevance};
use super::rx_stamp::RxInfo;
use super::state::{ReceivedRequest, SimState};
use super::stream::sse_body;
use super::truth::TruthRecord;

type St = State<Arc<Front>>;

/// The simulator's router, every route under `cfg.mount` when set (requests outside it
/// are answered 404, remembered and printed).
pub(crate) fn router(st: Arc<Front>) -> Router {
    let mount = st.main().cfg.mount.clone().unwrap_or_default();
    let at = |route: &str| format!("{mount}{route}");
    let router = Router::new()
        .route(&at("/v1/chat/completions"), post(chat))
        .route(&at("/v1/completions"), post(completions))
        .route(&at("/v1/responses"), post(responses))
        .route(&at("/v1/embeddings"), post(embeddings))
        .route(&at("/v1/rerank"), post(rerank))
        .route(&at("/rerank"), post(rerank))
        .route(&at("/v2/rerank"), post(rerank))
        .route(&at("/v1/models"), get(models))
        .route(&at("/health"), get(|| async { StatusCode::OK }))
        .route(&at("/version"), get(version))
        .route(&at("/metrics"), get(metrics))
        .route(&at("/reset_prefix_cache"), post(reset_prefix_cache))
        .route(&at("/sim/truth"), get(truth).delete(truth_reset));
    let router = if mount.is_empty() {
        router
    } else {
        router.fallback(unserved)
    };
    router.with_state(st)
}

/// The server's version, as vLLM answers `GET /version`, with its name.
async fn version() -> Response {
    json_response(&json!({"version": env!("CARGO_PKG_VERSION"), "server": "perfplan-sim"}))
}

/// A request outside the mount: 404, remembered, and said on stderr. A path inside the
/// mount that no route serves (another engine's `/props`) is a plain 404.
async fn unserved(State(front): St, method: Method, uri: Uri) -> Response {
    let st = front.main();
    let mount = st.cfg.mount.as_deref().unwrap_or_default();
    if uri
        .path()
        .starts_with(&format!("{}/", mount.trim_end_matches('/')))
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    let what = format!("{method} {}", uri.path());
    eprintln!(
        "perfplan sim: {what} is outside the mount {}: answered 404",
        st.cfg.mount.as_deref().unwrap_or("/")
    );
    st.record_unserved(what);
    StatusCode::NOT_FOUND.into_response()
}

/// The connection's receive clock (every listener of the simulator provides it).
type Rx = ConnectInfo<RxInfo>;

async fn chat(st: St, ConnectInfo(rx): Rx, headers: HeaderMap, uri: Uri, body: Bytes) -> Response {
    generate(st.0, Api::Chat, rx.arrival(), &headers, &uri, body).await
}

async fn completions(
    st: St,
    ConnectInfo(rx): Rx,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> Response {
    generate(st.0, Api::Completions, rx.arrival(), &headers, &uri, body).await
}

async fn responses(
    st: St,
    ConnectInfo(rx): Rx,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> Response {
    generate(st.0, Api::Responses, rx.arrival(), &headers, &uri, body).await
}

/// Parses and records a JSON body.
fn read_body(
    st: &SimState,
    headers: &HeaderMap,
    uri: &Uri,
    body: &Bytes,
) -> Result<Value, ApiError> {
    let parsed = serde_json::from_slice::<Value>(body);
    if st.keeps_requests() {
        st.record_request(ReceivedRequest {
            method: Method::POST.to_string(),
            path: uri.path().to_string(),
            headers: header_list(headers),
            body: parsed.as_ref().cloned().unwrap_or(Value::Null),
        });
    }
    parsed.map_err(|e| ApiError::bad_request(format!("request body is not JSON: {e}"), None))
}

/// The headers as received, secret values redacted.
fn header_list(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let value = if crate::secrets::is_secret_header(name.as_str()) {
                crate::secrets::REDACTED.to_string()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name.as_str().to_string(), value)
        })
        .collect()
}

/// The immediate answer of an HTTP-status fault; waits out a slow-headers fault.
async fn fault_answer(st: &SimState, fault: Fault) -> Option<Response> {
    if let Some(status) = fault.status() {
        let e = ApiError {
            status,
            message: if fault == Fault::QueueFull {
                "the request queue is full (max_queued_requests)".to_string()
            } else {
                format!("simulated HTTP {status}")
            },
            kind: if status == 429 {
                "rate_limit_error"
            } else {
                "server_error"
            },
            param: None,
        };
        return Some(error_response(&e));
    }
    if fault == Fault::SlowHeaders {
        tokio::time::sleep(st.cfg.fault_headers_delay.0).await;
    }
    None
}

/// The next request number and its fault.
fn deal(st: &SimState) -> (u64, Fault) {
    let seq = st.next_seq();
    (seq, st.deck.deal(seq))
}

/// Whether a generation arriving now finds every batch slot taken and the queue holding
/// `max_queued_requests` already.
fn queue_full(st: &SimState) -> bool {
    st.cfg.max_queued_requests.is_some_and(|max| {
        st.slots.available_permits() == 0
            && st.waiting.load(std::sync::atomic::Ordering::Relaxed) >= u64::from(max)
    })
}

/// Answers a generation request that arrived (its first bytes were received) at `arrival`,
/// on the worker the front routes it to.
async fn generate(
    front: Arc<Front>,
    api: Api,
    arrival: Instant,
    headers: &HeaderMap,
    uri: &Uri,
    body: Bytes,
) -> Response {
    let (worker, st) = front.pick(headers);
    let job = match read_body(front.main(), headers, uri, &body)
        .and_then(|v| parse_job(api, &st.cfg, &v, &st.tokens))
    {
        Ok(job) => job,
        Err(e) => return error_response(&e),
    };
    let (seq, mut fault) = deal(&st);
    if queue_full(&st) {
        fault = Fault::QueueFull;
    }
    let record = TruthRecord {
        request_id: format!("{:016x}{seq:016x}", mix(st.cfg.seed ^ seq)),
        client_request_id: headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        seq,
        path: uri.path().to_string(),
        stream: job.stream,
        fault,
        status: fault.status().unwrap_or(200),
        arrival_us: st.micros(arrival),
        prompt_tokens: job.prompt_tokens(),
        worker: front.routes().then_some(worker),
        ..TruthRecord::default()
    };
    if let Some(answer) = fault_answer(&st, fault).await {
        let mut r = record;
        r.finished = true;
        st.push_truth(r);
        return answer;
    }
    let stream = job.stream;
    let mut gen = Generation::new(st, job, seq, fault, record);
    gen.arrived_at(if fault == Fault::SlowHeaders {
        Instant::now()
    } else {
        arrival
    });
    let id = HeaderValue::from_str(&gen.fmt.id).ok();
    let mut resp = if stream {
        sse_response(gen)
    } else {
        complete(gen).await
    };
    if let Some(id) = id {
        resp.headers_mut().insert("x-request-id", id);
    }
    resp
}

/// A streamed answer: SSE headers now, chunks as they fall due.
fn sse_response(gen: Generation) -> Response {
    let mut r = Response::new(Body::from_stream(sse_body(gen)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn embeddings(State(front): St, headers: HeaderMap, uri: Uri, body: Bytes) -> Response {
    let st = front.pick(&headers).1;
    let v = match read_body(front.main(), &headers, &uri, &body)
        .and_then(|v| super::request::check_common(&st.cfg, &v).map(|()| v))
    {
        Ok(v) => v,
        Err(e) => return error_response(&e),
    };
    let inputs = texts_tokens(v.get("input"), &st.tokens);
    if inputs.is_empty() {
        return error_response(&ApiError::bad_request(
            "`input` must be a string, a list of strings or token ids",
            Some("input"),
        ));
    }
    if let Some(answer) = fault_answer(&st, deal(&st).1).await {
        return answer;
    }
    let tokens: u64 = inputs.iter().map(|t| t.len() as u64).sum();
    let cfg = &st.cfg;
    tokio::time::sleep(encode_time(
        cfg.ttft_base.0,
        cfg.prefill_tokens_per_s,
        tokens,
    ))
    .await;
    let dim = cfg.embedding_dim.max(1) as usize;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": embedding(t, dim)}))
        .collect();
    json_response(&json!({
        "id": format!("embd-{:016x}", st.micros(Instant::now())), "object": "list",
        "created": st.start_unix_us / 1_000_000, "model": v.get("model").cloned().unwrap_or(Value::Null),
        "data": data, "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

async fn rerank(State(front): St, headers: HeaderMap, uri: Uri, body: Bytes) -> Response {
    let st = front.pick(&headers).1;
    let v = match read_body(front.main(), &headers, &uri, &body)
        .and_then(|v| super::request::check_common(&st.cfg, &v).map(|()| v))
    {
        Ok(v) => v,
        Err(e) => return error_response(&e),
    };
    let query = texts_tokens(v.get("query"), &st.tokens).concat();
    let docs = texts_tokens(v.get("documents"), &st.tokens);
    if let Some(answer) = fault_answer(&st, deal(&st).1).await {
        return answer;
    }
    let tokens = docs
        .iter()
        .map(|d| (d.len() + query.len()) as u64)
        .sum::<u64>();
    let cfg = &st.cfg;
    tokio::time::sleep(encode_time(
        cfg.ttft_base.0,
        cfg.prefill_tokens_per_s,
        tokens,
    ))
    .await;
    let mut results: Vec<(usize, f64)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (i, relevance(&query, d)))
        .collect();
    results.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top = v
        .get("top_n")
        .and_then(Value::as_u64)
        .map_or(results.len(), |n| n as usize);
    let documents = v.get("documents").and_then(Value::as_array);
    let results: Vec<Value> = results
        .into_iter()
        .take(top)
        .map(|(i, score)| {
            let doc = documents
                .and_then(|d| d.get(i))
                .cloned()
                .unwrap_or(Value::Null);
            let text = doc.as_str().map_or(doc.clone(), |s| json!({"text": s}));
            json!({"index": i, "document": text, "relevance_score": score})
        })
        .collect();
    json_response(&json!({
        "id": format!("rerank-{:016x}", st.micros(Instant::now())),
        "model": v.get("model").cloned().unwrap_or(Value::Null),
        "usage": {"total_tokens": tokens}, "results": results,
    }))
}

async fn models(State(front): St, headers: HeaderMap, uri: Uri) -> Response {
    let st = front.main();
    st.record_request(ReceivedRequest {
        method: "GET".into(),
        path: uri.path().to_string(),
        headers: header_list(&headers),
        body: Value::Null,
    });
    let any = st.cfg.models.is_empty();
    let names: Vec<&str> = if any {
        vec!["sim-model"]
    } else {
        st.cfg.models.iter().map(String::as_str).collect()
    };
    let created = st.start_unix_us / 1_000_000;
    let data: Vec<Value> = names
        .iter()
        .map(|m| json!({"id": m, "object": "model", "created": created, "owned_by": "perfplan-sim", "root": m, "parent": null}))
        .collect();
    let mut list = json!({"object": "list", "data": data});
    if any {
        // Without `models`, every name is served: said so, for perfplan's connection test.
        list[crate::api::models::ANY_MODEL_KEY] = Value::Bool(true);
    }
    json_response(&list)
}

async fn metrics(State(front): St) -> Response {
    front
        .main()
        .scrapes
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut r = Response::new(Body::from(super::metrics::render(front.workers())));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

async fn reset_prefix_cache(State(front): St) -> Response {
    let resets = &front.main().resets;
    resets.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    front.reset_cache();
    StatusCode::OK.into_response()
}

#[derive(Deserialize)]
struct TruthQuery {
    #[serde(default)]
    reset: bool,
}

async fn truth(State(st): St, Query(q): Query<TruthQuery>) -> Response {
    json_response(&json!(st.truth(q.reset)))
}

async fn truth_reset(State(st): St) -> Response {
    st.truth(true);
    StatusCode::NO_CONTENT.into_response()
}
