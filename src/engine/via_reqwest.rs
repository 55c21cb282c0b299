//! The reqwest path of one exchange (`https://`, proxies, `force_reqwest`): the same
//! reading and outcome rules as the lean client, over reqwest's connection pool.

use std::time::Instant;

use super::exchange::{deadline, timed_out, until_head, Failure, Reading};
use super::record::{Outcome, RequestRecord};
use super::source::PreparedRequest;
use super::target::Endpoint;
use crate::api::SseDecoder;

/// The error and its chain of causes (a TLS failure told in words), as one line.
pub(crate) fn chain(e: &reqwest::Error) -> String {
    super::exchange::excerpt(crate::control::explain(e).as_bytes())
}

fn classify_send(e: &reqwest::Error) -> Failure {
    let outcome = if e.is_timeout() {
        Outcome::Timeout
    } else {
        Outcome::Connect
    };
    Failure::new(outcome, chain(e))
}

fn content_type_is(response: &reqwest::Response, prefix: &str) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with(prefix))
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
    let index = rec.index;
    let send = async {
        let mut post = ep.client.post(url).body(req.body.clone());
        for (name, value) in &req.headers {
            post = post.header(name.as_str(), value.as_str());
        }
        if let Some((prefix, first)) = &ep.request_ids {
            post = post.header(
                "x-request-id",
                super::request_id::request_id(prefix, first + index),
            );
        }
        let r = post.send().await;
        r.map_err(|e| classify_send(&e))
    };
    let mut response = until_head(send, sleep.as_mut(), ep, sent_at).await?;
    let status = response.status().as_u16();
    rec.http_status = Some(status);
    let event_stream = content_type_is(&response, "text/event-stream");
    let json = content_type_is(&response, "application/json");
    let streamed = status == 200 && (event_stream || (req.stream && !json));
    let mut reading = Reading::new(
        (status, streamed),
        req.kind,
        t0,
        SseDecoder::new(),
        ep.raw_responses,
    );
    rec.end = reading.last - t0;
    loop {
        tokio::select! {
            biased;
            chunk = response.chunk() => match chunk {
                Ok(Some(bytes)) => {
                    reading.on_data(rec, &bytes, Instant::now());
                    if reading.broken() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let what = if streamed { Outcome::StreamBroken } else { Outcome::BadBody };
                    let outcome = if e.is_timeout() { Outcome::Timeout } else { what };
                    return Err(Failure::new(outcome, chain(&e)));
                }
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
    reading.conclude(req.kind, rec)
}
