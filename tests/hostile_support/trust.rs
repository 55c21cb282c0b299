//! Answers that are well-formed but make the run's numbers untrustworthy, each a success
//! whose run's verdict must say so: usage that disagrees with what was streamed, a
//! stream buffered into one burst, a whole body to a streamed request, and a server
//! that fails one request in three.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{
    content, fails, finish, json_response, ok, role, stream_head, usage_chunk, Reply, Request,
    Route, Tokens,
};

/// The eight pieces of every answer here (eight tokens of the SmolLM2 fixture).
const WORDS: [&str; 8] = [
    "One", " two", " three", " four", " five", " six", " seven", " eight",
];

pub const ROUTES: &[Route] = &[
    ok(
        "usage_overcount",
        "eight tokens streamed 5 ms apart, usage says 800",
        usage_overcount,
        Tokens::Usage(800),
    ),
    ok(
        "buffered",
        "nothing for 300 ms, then the whole stream in one write (a buffering proxy)",
        buffered,
        Tokens::Usage(8),
    ),
    ok(
        "body_for_stream",
        "a streamed request answered with one JSON body",
        body_for_stream,
        Tokens::Usage(8),
    ),
    fails(
        "every_third_fails",
        "every third request answers HTTP 500",
        every_third_fails,
        "http_500",
        "overloaded",
    ),
];

fn events(completion: u32) -> Vec<String> {
    let mut e = vec![role()];
    e.extend(WORDS.iter().map(|w| content(w)));
    e.extend([finish("length"), usage_chunk(9, completion)]);
    e
}

fn usage_overcount(_: &Request) -> Reply {
    let mut pieces = vec![stream_head("text/event-stream")];
    pieces.extend(events(800).into_iter().map(String::into_bytes));
    pieces.push(b"data: [DONE]\n\n".to_vec());
    Reply::Pieces {
        pieces: Box::new(pieces.into_iter()),
        pause: Duration::from_millis(5),
    }
}

fn buffered(_: &Request) -> Reply {
    let mut body = events(8).concat().into_bytes();
    body.extend_from_slice(b"data: [DONE]\n\n");
    Reply::Pieces {
        pieces: Box::new([stream_head("text/event-stream"), body].into_iter()),
        pause: Duration::from_millis(300),
    }
}

fn body_for_stream(_: &Request) -> Reply {
    let body = format!(
        r#"{{"id":"chatcmpl-h","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"length"}}],"usage":{{"prompt_tokens":9,"completion_tokens":8,"total_tokens":17}}}}"#,
        serde_json::Value::from(WORDS.concat())
    );
    Reply::KeepAlive(json_response(200, &body))
}

static SEEN: AtomicU64 = AtomicU64::new(0);

/// Fails one request in three (the hostile suite expects the failures; the verdict test
/// expects a run above the failure threshold).
fn every_third_fails(_: &Request) -> Reply {
    if SEEN.fetch_add(1, Ordering::Relaxed) % 3 == 2 {
        return Reply::KeepAlive(json_response(
            500,
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
        ));
    }
    let mut body = events(8).concat().into_bytes();
    body.extend_from_slice(b"data: [DONE]\n\n");
    let mut out = stream_head("text/event-stream");
    out.extend_from_slice(&body);
    Reply::Close(out)
}
