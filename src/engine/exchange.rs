//! One request on the wire: send, read the response as its bytes arrive, and turn what
//! was observed into a `RequestRecord`. Every failure becomes an outcome, never an `Err`.
//!
//! Hot path: one timestamp per read of the socket, the SSE decoder and a borrowing
//! chunk parser; the idle-read timer is re-armed only when it fires (lazy), so a chunk
//! costs no timer work; no lock anywhere.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::time::Sleep;

use super::h1::{BodyState, Conn, Framing, H1Client, Head};
use super::response::Reading;
use super::source::PreparedRequest;
use super::target::Endpoint;
use super::via_reqwest::drive_reqwest;
use crate::record::{Outcome, RequestRecord, Usage};

pub(crate) struct Failure {
    pub outcome: Outcome,
    pub error: String,
}

impl Failure {
    pub(crate) fn new(outcome: Outcome, error: impl Into<String>) -> Failure {
        Failure {
            outcome,
            error: error.into(),
        }
    }
}

fn new_record(req: &PreparedRequest, index: u64, intended: Duration) -> RequestRecord {
    RequestRecord {
        index,
        item: req.item,
        phase: req.phase,
        intended,
        sent: intended,
        connect: None,
        tls: None,
        first_chunk: None,
        content_times: Vec::new(),
        last_chunk: None,
        first_answer: None,
        end: intended,
        outcome: Outcome::Ok,
        http_status: None,
        error: None,
        finish_reason: None,
        usage: Usage::default(),
        output_text: String::new(),
        reasoning_text: String::new(),
        output_bytes: req.kind.can_stream().then_some(0),
        client_output_tokens: None,
        client_reasoning_tokens: None,
        stream_tokens: None,
        client_input_tokens: req.client_input_tokens,
        request_bytes: req.body.len() as u64,
        response_bytes: 0,
        replica: None,
        class: req.class,
        read_clock: None,
        answer: None,
        content_delays: Vec::new(),
        tools: None,
        tool_calls: Vec::new(),
        unstreamed: false,
        raw: Vec::new(),
    }
}

/// Sends `req` and observes its response. `t0` is the run's start; `cancel` completing
/// (sent or dropped) ends the request at once as `Cancelled`.
pub(crate) async fn exchange(
    ep: &Endpoint,
    req: PreparedRequest,
    index: u64,
    intended: Duration,
    t0: Instant,
    mut cancel: oneshot::Receiver<()>,
) -> RequestRecord {
    let mut rec = new_record(&req, index, intended);
    let (replica, ep) = ep.pick(index, req.session);
    rec.replica = replica;
    // When the exchange began: the timeouts count from it. `sent` moves to the write on
    // an established connection when the request had to open one (or was retried).
    let sent_at = Instant::now();
    rec.sent = sent_at - t0;
    let result = {
        let work = drive(ep, &req, &mut rec, t0, sent_at);
        tokio::pin!(work);
        let planned = planned_abort(&req, sent_at);
        tokio::select! {
            biased;
            r = &mut work => r,
            _ = &mut cancel => Err(Failure::new(Outcome::Cancelled, "cancelled before the response ended")),
            why = planned => Err(Failure::new(Outcome::Cancelled, why)),
        }
    };
    if let Err(f) = result {
        rec.outcome = f.outcome;
        rec.error = Some(f.error);
        rec.end = Instant::now() - t0;
    }
    if let Some(turn) = &req.tools {
        rec.tools = Some(turn.set.tally(turn.round, &rec.tool_calls));
    }
    if let Some(golden) = &req.check {
        rec.answer = Some(golden.expected.judge(&rec, golden.tools.as_deref()));
    }
    rec
}

/// The plan's cancellation of `req` (`cancel_after`): completes at that time after the
/// exchange began, with the record's error (the planned time, so a stored row says it);
/// never without one. Dropping the exchange's work then drops its connection.
async fn planned_abort(req: &PreparedRequest, sent_at: Instant) -> String {
    match req.cancel_after {
        Some(after) => {
            tokio::time::sleep_until((sent_at + after).into()).await;
            format!(
                "cancelled by the plan (`cancel`) {} after send",
                crate::units::format_duration(after)
            )
        }
        None => std::future::pending().await,
    }
}

/// The deadline of the idle/total timer given the time of the last activity.
pub(crate) fn deadline(ep: &Endpoint, sent_at: Instant, last: Instant) -> Instant {
    let idle = last + ep.timeouts.read;
    match ep.timeouts.total {
        Some(t) => idle.min(sent_at + t),
        None => idle,
    }
}

pub(crate) fn timed_out(
    ep: &Endpoint,
    sent_at: Instant,
    last: Instant,
    now: Instant,
) -> Option<Failure> {
    let shown = crate::units::format_duration;
    if let Some(t) = ep.timeouts.total.filter(|t| now >= sent_at + *t) {
        let why = format!(
            "total timeout: not done after {} (timeouts.total)",
            shown(t)
        );
        return Some(Failure::new(Outcome::Timeout, why));
    }
    (now >= last + ep.timeouts.read).then(|| {
        let why = format!(
            "read timeout: no bytes for {} (timeouts.read)",
            shown(ep.timeouts.read)
        );
        Failure::new(Outcome::Timeout, why)
    })
}

async fn drive(
    ep: &Endpoint,
    req: &PreparedRequest,
    rec: &mut RequestRecord,
    t0: Instant,
    sent_at: Instant,
) -> Result<(), Failure> {
    match &ep.h1 {
        Some(h1) => drive_h1(h1, ep, req, rec, t0, sent_at).await,
        None => drive_reqwest(ep, req, rec, t0, sent_at).await,
    }
}

/// A connection that could not be opened: refused, timed out, out of descriptors or
/// ports (named), or a TLS handshake that failed (its cause in words, as on the reqwest
/// path: an unknown issuer, a name mismatch, an expired certificate).
pub(crate) fn connect_failure(e: &std::io::Error) -> Failure {
    let outcome = if e.kind() == std::io::ErrorKind::TimedOut {
        Outcome::Timeout
    } else {
        Outcome::Connect
    };
    if crate::control::tls_problem(e).is_some() {
        let words = crate::control::explain(e);
        return Failure::new(outcome, format!("TLS handshake: {words}"));
    }
    let hint = match e.raw_os_error() {
        Some(24) => " (too many open files: raise `ulimit -n` above the concurrency)",
        Some(99) => " (no free local port: too many connections in TIME_WAIT)",
        _ => "",
    };
    Failure::new(outcome, format!("connect: {e}{hint}"))
}

/// Connects (or takes an idle connection), sends, and reads the response head; stamps
/// `rec.sent` as the request is written on the established connection, and `rec.connect`
/// and `rec.tls` when the request opened it. A pooled connection that fails before any
/// answer byte was closed by the server while idle: the request is sent once more on a
/// fresh connection and timed from there (not a failure).
async fn open_h1(
    h1: &H1Client,
    target: &str,
    req: &PreparedRequest,
    ids: super::request_id::Ids<'_>,
    rec: &mut RequestRecord,
    t0: Instant,
) -> Result<(Conn, Head), Failure> {
    let mut conn = h1.checkout().await.map_err(|e| connect_failure(&e))?;
    loop {
        let reused = conn.reused;
        rec.connect = (!reused).then_some(conn.setup);
        rec.tls = conn.tls.filter(|_| !reused);
        rec.sent = Instant::now() - t0;
        let result = match h1.send(&mut conn, target, req, ids).await {
            Ok(()) => conn.read_head().await,
            Err(e) => Err(e),
        };
        match result {
            Ok(Some(head)) => return Ok((conn, head)),
            // A TLS alert before any answer (a client certificate the server refused once
            // the handshake was over on this side): the connection's failure, in words.
            Err(e) if !conn.answered() && crate::control::tls_problem(&e).is_some() => {
                return Err(connect_failure(&e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(Failure::new(Outcome::BadBody, e.to_string()))
            }
            Ok(None) | Err(_) if reused && !conn.answered() => {
                conn = h1.connect().await.map_err(|e| connect_failure(&e))?
            }
            Ok(None) => {
                return Err(Failure::new(
                    Outcome::Connect,
                    "connection closed before the response",
                ))
            }
            Err(e) if conn.answered() => {
                return Err(Failure::new(Outcome::StreamBroken, e.to_string()))
            }
            Err(e) => {
                return Err(Failure::new(
                    Outcome::Connect,
                    format!("before the response: {e}"),
                ))
            }
        }
    }
}

/// Waits for `fut` (connect, send, response head) under the idle/total timeouts.
pub(crate) async fn until_head<T>(
    fut: impl Future<Output = Result<T, Failure>>,
    mut sleep: Pin<&mut Sleep>,
    ep: &Endpoint,
    sent_at: Instant,
) -> Result<T, Failure> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            biased;
            r = &mut fut => return r,
            () = &mut sleep => {
                if let Some(mut f) = timed_out(ep, sent_at, sent_at, Instant::now()) {
                    f.error.push_str(" (waiting for the response headers)");
                    return Err(f);
                }
                sleep.as_mut().reset(deadline(ep, sent_at, sent_at).into());
            }
        }
    }
}

async fn drive_h1(
    h1: &H1Client,
    ep: &Endpoint,
    req: &PreparedRequest,
    rec: &mut RequestRecord,
    t0: Instant,
    sent_at: Instant,
) -> Result<(), Failure> {
    // One timer per request, re-armed only when it fires (the deadline only moves later).
    let sleep = tokio::time::sleep_until(deadline(ep, sent_at, sent_at).into());
    tokio::pin!(sleep);
    let id = ep
        .request_ids
        .as_ref()
        .map(|(p, first)| (&**p, first + rec.index));
    let ids = super::request_id::Ids {
        request: id,
        session: ep.session_header.as_deref().zip(req.session),
    };
    let target = crate::control::request_target(ep.url(req.kind));
    let opened = open_h1(h1, target, req, ids, rec, t0);
    let (mut conn, head) = until_head(opened, sleep.as_mut(), ep, sent_at).await?;
    rec.http_status = Some(head.status);
    let streamed = head.status == 200 && (head.event_stream || (req.stream && !head.json));
    let decoder = std::mem::take(&mut conn.sse);
    let mut reading = Reading::new((head.status, streamed), req, ep, t0, decoder);
    rec.end = reading.last - t0;
    let mut framing = BodyState::new(head.framing);
    loop {
        let read = conn.read_body(&mut framing, |data, arrival| {
            reading.on_data(rec, data, arrival)
        });
        tokio::select! {
            biased;
            r = read => match r {
                Ok(true) if !reading.broken() => {}
                Ok(_) => break,
                Err(e) => return Err(Failure::new(body_failure(&e), e.to_string())),
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
    if framing.done() && !head.close && head.framing != Framing::UntilClose {
        conn.sse = std::mem::take(&mut reading.decoder);
        h1.checkin(conn);
    }
    reading.conclude(rec)
}

/// The class of a failure while reading a body, streamed or not: framing that cannot be
/// parsed (a malformed chunk) is `bad_body`; a connection that ended or broke before the
/// body did (cut short against its `Content-Length`, inside a chunk, reset) is
/// `stream_broken`, whether or not the bytes that came would parse.
pub(crate) fn body_failure(e: &std::io::Error) -> Outcome {
    match e.kind() {
        std::io::ErrorKind::InvalidData => Outcome::BadBody,
        _ => Outcome::StreamBroken,
    }
}
