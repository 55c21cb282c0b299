//! The reqwest path of one exchange (`https://`, proxies, `force_reqwest`): the same
//! reading, outcome, retry and timing rules as the lean client, over reqwest's pool
//! (connection setup timed by `connect_times`).

use std::error::Error as _;
use std::time::Instant;

use super::exchange::{body_failure, deadline, timed_out, until_head, Failure};
use super::h1_head::content_kind;
use super::response::Reading;
use super::source::PreparedRequest;
use super::target::Endpoint;
use crate::api::SseDecoder;
use crate::record::{Outcome, RequestRecord};

/// The error and its chain of causes (a TLS failure told in words), as one line.
pub(crate) fn chain(e: &reqwest::Error) -> String {
    crate::record::excerpt(crate::control::explain(e).as_bytes())
}

fn classify_send(e: &reqwest::Error) -> Failure {
    let outcome = if e.is_timeout() {
        Outcome::Timeout
    } else {
        Outcome::Connect
    };
    Failure::new(outcome, chain(e))
}

/// The first `std::io::Error` in `e`'s chain of causes.
fn io_cause(e: &reqwest::Error) -> Option<&std::io::Error> {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

fn hyper_cause(e: &reqwest::Error) -> Option<&hyper::Error> {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            return Some(h);
        }
        source = s.source();
    }
    None
}

/// The connection closed or was reset after the request went out and before any byte of
/// the response: a pooled connection the server closed while idle. reqwest does not say
/// whether the connection was pooled, so this path retries any such failure once.
fn closed_before_answer(e: &reqwest::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    if e.is_timeout() || e.is_connect() || e.is_body() || e.is_decode() {
        return false;
    }
    hyper_cause(e).is_some_and(hyper::Error::is_incomplete_message)
        || io_cause(e).is_some_and(|io| {
            matches!(
                io.kind(),
                BrokenPipe | ConnectionAborted | ConnectionReset | UnexpectedEof
            )
        })
}

/// The class of a failure while reading the body (the lean client's rule, `body_failure`).
fn classify_body(e: &reqwest::Error) -> Outcome {
    if e.is_timeout() {
        return Outcome::Timeout;
    }
    match (io_cause(e), hyper_cause(e)) {
        (Some(io), _) => body_failure(io),
        (None, Some(h)) if h.is_parse() => Outcome::BadBody,
        _ => Outcome::StreamBroken,
    }
}

fn content_kind_of(response: &reqwest::Response) -> (bool, bool) {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map_or((false, false), content_kind)
}

/// POSTs `req` once.
async fn post(
    ep: &Endpoint,
    req: &PreparedRequest,
    index: u64,
    url: &reqwest::Url,
) -> Result<reqwest::Response, reqwest::Error> {
    let mut post = ep.client.post(url.clone()).body(req.body.clone());
    for (name, value) in &req.headers {
        post = post.header(name.as_str(), value.as_str());
    }
    if let Some((name, session)) = ep.session_header.as_deref().zip(req.session) {
        post = post.header(name, super::request_id::session_id(session));
    }
    if let Some((prefix, first)) = &ep.request_ids {
        post = post.header(
            "x-request-id",
            super::request_id::request_id(prefix, first + index),
        );
    }
    post.send().await
}

/// Sends `req` (once more on a fresh connection when the first one closed before the
/// answer, timed from the retry) and stamps `rec.sent` and `rec.connect` from the
/// connection that carried the answer: a new one's setup is the part this request waited
/// for, and `sent` is when it was ready.
async fn send(
    ep: &Endpoint,
    req: &PreparedRequest,
    rec: &mut RequestRecord,
    url: &reqwest::Url,
    t0: Instant,
) -> Result<reqwest::Response, Failure> {
    let mut began = Instant::now();
    let response = match post(ep, req, rec.index, url).await {
        Err(e) if closed_before_answer(&e) => {
            began = Instant::now();
            rec.sent = began - t0;
            post(ep, req, rec.index, url).await
        }
        r => r,
    }
    .map_err(|e| classify_send(&e))?;
    if let Some(setup) = ep.connects.claim(&response).filter(|s| s.ended > began) {
        rec.connect = Some(setup.ended - setup.began.max(began));
        rec.sent = setup.ended - t0;
    }
    Ok(response)
}

pub(crate) async fn drive_reqwest(
    ep: &Endpoint,
    req: &PreparedRequest,
    rec: &mut RequestRecord,
    t0: Instant,
    sent_at: Instant,
) -> Result<(), Failure> {
    let url = ep.url(req.kind).clone();
    let sleep = tokio::time::sleep_until(deadline(ep, sent_at, sent_at).into());
    tokio::pin!(sleep);
    let sending = send(ep, req, rec, &url, t0);
    let mut response = until_head(sending, sleep.as_mut(), ep, sent_at).await?;
    let status = response.status().as_u16();
    rec.http_status = Some(status);
    let (event_stream, json) = content_kind_of(&response);
    let streamed = status == 200 && (event_stream || (req.stream && !json));
    let mut reading = Reading::new((status, streamed), req, ep, t0, SseDecoder::new());
    rec.end = reading.last - t0;
    loop {
        tokio::select! {
            biased;
            chunk = response.chunk() => match chunk {
                Ok(Some(bytes)) => {
                    reading.on_data(rec, &bytes, super::stamped_tcp::Arrival::of(None));
                    if reading.broken() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(Failure::new(classify_body(&e), chain(&e))),
            },
            () = &mut sleep => {
                if let Some(f) = timed_out(ep, sent_at, reading.last, Instant::now()) {
                    return Err(f);
                }
                sleep.as_mut().reset(deadline(ep, sent_at, reading.last).into());
            }
        }
    }
    reading.finish(rec);
    reading.conclude(rec)
}
