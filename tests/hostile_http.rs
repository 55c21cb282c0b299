//! HTTP/1.1 as servers really speak it: chunk extensions and trailers, close-delimited
//! bodies, kept-alive connections the server closes, 1xx answers, header case, bodies cut
//! short, HTTP/1.0, Transfer-Encoding with Content-Length, heads split across reads. Each
//! misbehaviour has its own raw-TCP server on 127.0.0.1:0 (`framing_support`), and each
//! runs through the lean client and through reqwest with the same expectations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod framing_support;
mod kept_support;

use std::time::Duration;

use framing_support::{
    both, json_answer, sse, sse_response, with_length, write, At, Server, Step, Traffic,
};
use perfplan::record::{Outcome, RequestRecord};

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";

/// Every record succeeded with `text` as its output.
fn all_ok(name: &str, records: &[RequestRecord], text: &str) {
    for r in records {
        assert_eq!(r.outcome, Outcome::Ok, "{name}: {:?}", r.error);
        assert_eq!(r.output_text, text, "{name}");
    }
}

/// `body` in chunks of 7 bytes: sizes in upper-case hex with leading zeros, chunk
/// extensions (with and without whitespace, a quoted value holding `;`), then trailers.
fn chunked(body: &str) -> String {
    let mut out = String::new();
    for (i, piece) in body.as_bytes().chunks(7).enumerate() {
        let ext = match i % 3 {
            0 => ";name=value",
            1 => " ; q=\"a;b\"",
            _ => "",
        };
        out.push_str(&format!("{:04X}{ext}\r\n", piece.len()));
        out.push_str(std::str::from_utf8(piece).unwrap());
        out.push_str("\r\n");
    }
    out.push_str("0;last=1\r\nX-Trailer: one\r\nServer-Timing: total;dur=12\r\n\r\n");
    out
}

#[tokio::test]
async fn chunk_extensions_and_trailers_are_read_and_the_connection_kept() {
    let script = |_| {
        vec![write(format!(
            "{SSE_HEAD}Transfer-Encoding: chunked\r\n\r\n{}",
            chunked(&sse(&["a", "b", "c"]))
        ))]
    };
    both(script, Traffic::serial(3), |name, records, server| {
        all_ok(name, records, "abc");
        assert!(records.iter().all(|r| r.usage.completion_tokens == Some(3)));
        assert_eq!(server.connections(), 1, "{name}: trailers read exactly");
    })
    .await;
}

#[tokio::test]
async fn close_delimited_bodies_end_at_the_close() {
    // No length, no chunking, `Connection: close`: the body is everything until the close.
    let streamed = |_| {
        vec![
            write(format!(
                "{SSE_HEAD}Connection: close\r\n\r\n{}",
                sse(&["x", "y"])
            )),
            Step::Close,
        ]
    };
    both(streamed, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "xy");
        assert_eq!(server.connections(), 2, "{name}");
    })
    .await;
    let whole = |_| {
        vec![
            write(format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{}",
                json_answer("Paris")
            )),
            Step::Close,
        ]
    };
    both(whole, Traffic::one(false), |name, records, _| {
        all_ok(name, records, "Paris");
    })
    .await;
}

#[tokio::test]
async fn a_kept_alive_connection_the_server_closes_is_retried_and_timed_from_the_retry() {
    // The server keeps the first connection alive, then takes the second request on it,
    // holds it 600 ms and closes without a byte of answer; every other request is answered.
    let hold = Duration::from_millis(600);
    let script = move |at: At| match (at.conn, at.request) {
        (0, 1) => vec![Step::Sleep(hold), Step::Close],
        _ => vec![write(sse_response(&["a"]))],
    };
    both(script, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "a");
        let retried = &records[1];
        assert!(retried.connect.is_some(), "{name}: the retry's connection");
        let ttft = retried.ttft().unwrap();
        assert!(
            ttft < hold / 2,
            "{name}: TTFT {ttft:?} counts the stale attempt"
        );
        assert_eq!((server.requests(), server.connections()), (3, 2), "{name}");
    })
    .await;
}

#[tokio::test]
async fn a_server_closing_after_every_answer_costs_no_failures() {
    // Kept alive by its headers, closed right after each answer.
    let script = |_| vec![write(sse_response(&["a"])), Step::Close];
    both(script, Traffic::serial(6), |name, records, _| {
        all_ok(name, records, "a");
    })
    .await;
}

#[tokio::test]
async fn informational_answers_come_before_the_final_one() {
    let script = |_| {
        vec![write(format!(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n{}",
            sse_response(&["a", "b"])
        ))]
    };
    both(script, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "ab");
        assert!(records.iter().all(|r| r.http_status == Some(200)));
        assert_eq!(server.connections(), 1, "{name}");
    })
    .await;
}

#[tokio::test]
async fn header_names_and_values_in_any_case() {
    let shouting = |_| {
        vec![write(format!(
            "HTTP/1.1 200 OK\r\nCONTENT-TYPE: Text/Event-Stream; Charset=UTF-8\r\n\
             TRANSFER-ENCODING: Chunked\r\nCONNECTION: Keep-Alive\r\n\r\n{}",
            chunked(&sse(&["a"]))
        ))]
    };
    both(shouting, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "a");
        assert_eq!(server.connections(), 1, "{name}");
    })
    .await;
    // A JSON answer to a streamed request, its type in capitals: read as a body. The
    // connection is announced closed (in capitals) but left open, and a second request
    // on it would never be answered.
    let json = |at: At| match at.request {
        0 => vec![write(with_length(
            "HTTP/1.1 200 OK",
            "content-type: Application/JSON\r\nconnection: CLOSE\r\n",
            &json_answer("Paris"),
        ))],
        _ => vec![Step::Sleep(Duration::from_secs(5)), Step::Close],
    };
    both(json, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "Paris");
        assert_eq!(server.connections(), 2, "{name}");
    })
    .await;
}

#[tokio::test]
async fn a_body_cut_short_of_its_length_is_stream_broken() {
    // The connection ends before the body does: `stream_broken`, streamed or not (the
    // bytes that came might even parse); `bad_body` is for a whole body that cannot.
    let body = json_answer("Paris");
    let whole = move |_| {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len() * 2
        );
        vec![write(head + &body), Step::Close]
    };
    both(whole, Traffic::one(false), |name, records, _| {
        assert_eq!(records[0].outcome, Outcome::StreamBroken, "{name}");
        assert!(records[0].error.is_some());
    })
    .await;
    let events = sse(&["a", "b"]);
    let streamed = move |_| {
        let head = format!("{SSE_HEAD}Content-Length: {}\r\n\r\n", events.len() + 100);
        vec![write(head + &events[..events.len() / 2]), Step::Close]
    };
    both(streamed, Traffic::one(true), |name, records, _| {
        assert_eq!(records[0].outcome, Outcome::StreamBroken, "{name}");
    })
    .await;
}

#[tokio::test]
async fn http_1_0_answers_close_unless_kept_alive() {
    // Close-delimited, as HTTP/1.0 servers answer.
    let until_close = |_| {
        vec![
            write(format!(
                "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n{}",
                sse(&["a"])
            )),
            Step::Close,
        ]
    };
    both(until_close, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "a");
        assert_eq!(server.connections(), 2, "{name}");
    })
    .await;
    // With a length but no keep-alive: not reused, even though the server lingers (a
    // second request on it would never be answered).
    let lingering = |at: At| match at.request {
        0 => vec![write(with_length(
            "HTTP/1.0 200 OK",
            "Content-Type: text/event-stream\r\n",
            &sse(&["a"]),
        ))],
        _ => vec![Step::Sleep(Duration::from_secs(5)), Step::Close],
    };
    both(lingering, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "a");
        assert_eq!(server.connections(), 2, "{name}");
    })
    .await;
    let kept = |_| {
        vec![write(with_length(
            "HTTP/1.0 200 OK",
            "Content-Type: text/event-stream\r\nConnection: keep-alive\r\n",
            &sse(&["a"]),
        ))]
    };
    both(kept, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "a");
        assert_eq!(server.connections(), 1, "{name}");
    })
    .await;
}

#[tokio::test]
async fn transfer_encoding_wins_over_content_length() {
    let script = |_| {
        vec![write(format!(
            "{SSE_HEAD}Content-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n{}",
            chunked(&sse(&["a", "b"]))
        ))]
    };
    both(
        script,
        Traffic::serial(2),
        |name, records, server: &Server| {
            all_ok(name, records, "ab");
            // Such a response is suspect (RFC 9112 6.3): the lean client does not reuse its
            // connection; reqwest (hyper) does, which this server allows.
            if name == "lean" {
                assert_eq!(server.connections(), 2);
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_head_split_across_many_reads() {
    let script = |_| {
        let response = sse_response(&["a", "b"]);
        let at = response.find("\r\n\r\n").unwrap() + 4;
        vec![
            Step::Trickle(response.as_bytes()[..at].to_vec(), Duration::from_millis(1)),
            write(&response[at..]),
        ]
    };
    both(script, Traffic::serial(2), |name, records, server| {
        all_ok(name, records, "ab");
        assert_eq!(server.connections(), 1, "{name}");
    })
    .await;
}
