//! Streamed answers: the SSE body of chat, completions and Responses API requests, produced
//! chunk by chunk at the deadlines of `generate`, with the mid-stream faults (drop, stall,
//! malformed chunk). Knows nothing about routing.

use std::io;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use serde_json::{json, Value};

use super::faults::Fault;
use super::format::{put_done, response_usage_json, words, ChunkOut};
use super::generate::Generation;
use super::request::Api;

/// Bytes gathered into one write when several chunks are already due.
const MAX_FRAME: usize = 16 * 1024;

enum Phase {
    Start,
    Admit,
    Tokens,
    Broken,
    Stalled,
    Done,
}

struct Streamer {
    gen: Generation,
    phase: Phase,
    buf: BytesMut,
    malformed_sent: bool,
}

/// The SSE body of `gen`.
pub(crate) fn sse_body(gen: Generation) -> impl Stream<Item = Result<Bytes, io::Error>> + Send {
    let s = Streamer {
        gen,
        phase: Phase::Start,
        buf: BytesMut::with_capacity(1024),
        malformed_sent: false,
    };
    futures_util::stream::unfold(s, step)
}

async fn step(mut s: Streamer) -> Option<(Result<Bytes, io::Error>, Streamer)> {
    loop {
        match s.phase {
            Phase::Start => {
                s.phase = Phase::Admit;
                if s.gen.job.api == Api::Responses {
                    // Sent before any queueing, as OpenAI does.
                    response_start(&mut s);
                    return Some((Ok(s.buf.split().freeze()), s));
                }
            }
            Phase::Admit => {
                if !s.gen.admit().await {
                    return None;
                }
                s.phase = Phase::Tokens;
            }
            Phase::Tokens => {
                if s.gen.st.is_closing() {
                    return None;
                }
                super::generate::sleep_until(s.gen.next).await;
                emit_due(&mut s);
                if !s.buf.is_empty() {
                    return Some((Ok(s.buf.split().freeze()), s));
                }
            }
            Phase::Broken => {
                s.phase = Phase::Done;
                return Some((Err(flushed_then_dropped().await), s));
            }
            Phase::Stalled => {
                s.gen.st.until_closed().await;
                return None;
            }
            Phase::Done => return None,
        }
    }
}

/// The error that drops the connection, returned only after one pending poll: hyper writes
/// the bytes it holds when the body is pending and discards them when the body fails, so
/// without it the chunks before a drop (and even the response head) never leave the
/// server on a busy machine, and the drop looks like a refused request.
pub(crate) async fn flushed_then_dropped() -> io::Error {
    tokio::task::yield_now().await;
    io::Error::other("simulated connection drop")
}

/// Writes every chunk already due into the buffer.
fn emit_due(s: &mut Streamer) {
    loop {
        let now = Instant::now();
        if s.gen.sent >= s.gen.fault_at() && mid_stream_fault(s) {
            return;
        }
        let n = s.gen.next_chunk_len();
        let (from, to) = (s.gen.sent, s.gen.sent + n);
        let last = to == s.gen.out_len;
        let finish = last.then_some(s.gen.finish);
        if from == 0 && s.gen.job.api == Api::Responses && s.gen.tool_calls.is_none() {
            response_first(s);
        }
        let prompt = s.gen.job.prompt_tokens();
        let running = |n: u32| s.gen.job.running_usage.then_some((prompt, u64::from(n)));
        let (role_usage, chunk_usage) = (running(0), running(to));
        let reasoning = from < s.gen.reasoning_len();
        for i in 0..s.gen.job.choices() {
            if from == 0 && s.gen.job.api == Api::Chat {
                s.gen.fmt.role(&mut s.buf, i, role_usage);
            }
            let chunk = ChunkOut {
                index: i,
                offset: s.gen.offset + u64::from(i) * 13,
                span: (from, to),
                finish,
                reasoning,
                running: chunk_usage,
            };
            match s.gen.tool_calls.as_deref().filter(|_| !reasoning) {
                Some(calls) if s.gen.job.api == Api::Chat => {
                    let think = s.gen.reasoning_len();
                    let span = (from - think, to - think);
                    let deltas = super::tools::deltas(calls, span, s.gen.out_len - think);
                    s.gen.fmt.tool_chunk(&mut s.buf, chunk, &deltas);
                }
                Some(calls) if s.gen.job.api == Api::Responses => {
                    let id = s.gen.fmt.id.clone();
                    let events =
                        super::tools::response_events(calls, (from, to), s.gen.out_len, &id);
                    for (kind, fields) in events {
                        s.gen.fmt.event(&mut s.buf, kind, fields);
                    }
                }
                _ => s.gen.fmt.content(&mut s.buf, chunk),
            }
        }
        s.gen.note_sent(n, now);
        if last {
            tail(s);
            s.gen.finished();
            s.phase = Phase::Done;
            return;
        }
        let next_len = s.gen.next_chunk_len();
        s.gen.advance(next_len);
        if s.gen.next.into_std() > Instant::now() || s.buf.len() >= MAX_FRAME {
            return;
        }
    }
}

/// Applies a drop, stall or malformed-chunk fault; true when the stream stops here.
fn mid_stream_fault(s: &mut Streamer) -> bool {
    match s.gen.fault {
        Fault::Drop => {
            s.gen.release();
            s.phase = Phase::Broken;
            true
        }
        Fault::Stall => {
            s.gen.release();
            s.phase = Phase::Stalled;
            true
        }
        Fault::Malformed if !s.malformed_sent => {
            s.gen.fmt.malformed(&mut s.buf);
            s.malformed_sent = true;
            false
        }
        _ => false,
    }
}

/// Usage chunk, closing events and `[DONE]`.
fn tail(s: &mut Streamer) {
    let usage = s.gen.usage();
    match s.gen.job.api {
        Api::Chat | Api::Completions => {
            if s.gen.job.stream_usage {
                let cached = !s.gen.st.cfg.omit_cached_tokens;
                s.gen.fmt.usage(&mut s.buf, usage, cached);
            }
            put_done(&mut s.buf);
        }
        Api::Responses if s.gen.tool_calls.is_some() => {
            let calls = s.gen.tool_calls.as_deref().unwrap_or_default();
            let output = super::tools::response_items(calls, &s.gen.fmt.id);
            let usage = s.gen.job.stream_usage.then(|| response_usage_json(usage));
            let resp = response_object(&s.gen, "completed", output, usage);
            s.gen
                .fmt
                .event(&mut s.buf, "response.completed", json!({"response": resp}));
        }
        Api::Responses => {
            let text = words(s.gen.offset, (0, s.gen.out_len), &s.gen.fmt.empty);
            let item = message_item(&s.gen, &text, "completed");
            let item_id = format!("msg_{}", s.gen.fmt.id);
            let part = json!({"type": "output_text", "text": text, "annotations": []});
            let at = json!({"item_id": item_id, "output_index": 0, "content_index": 0});
            let f = &mut s.gen.fmt;
            let mut done = at.clone();
            done["text"] = json!(text);
            f.event(&mut s.buf, "response.output_text.done", done);
            let mut part_done = at;
            part_done["part"] = part;
            f.event(&mut s.buf, "response.content_part.done", part_done);
            let item_done = json!({"output_index": 0, "item": item.clone()});
            f.event(&mut s.buf, "response.output_item.done", item_done);
            let usage = s.gen.job.stream_usage.then(|| response_usage_json(usage));
            let resp = response_object(&s.gen, "completed", vec![item], usage);
            s.gen
                .fmt
                .event(&mut s.buf, "response.completed", json!({"response": resp}));
        }
    }
}

/// `response.created` and `response.in_progress`, sent with the headers.
fn response_start(s: &mut Streamer) {
    let resp = response_object(&s.gen, "in_progress", Vec::new(), None);
    let f = &mut s.gen.fmt;
    f.event(
        &mut s.buf,
        "response.created",
        json!({"response": resp.clone()}),
    );
    f.event(
        &mut s.buf,
        "response.in_progress",
        json!({"response": resp}),
    );
}

/// `response.output_item.added` and `response.content_part.added`, before the first delta.
fn response_first(s: &mut Streamer) {
    let item = message_item(&s.gen, "", "in_progress");
    let item_id = format!("msg_{}", s.gen.fmt.id);
    let f = &mut s.gen.fmt;
    f.event(
        &mut s.buf,
        "response.output_item.added",
        json!({"output_index": 0, "item": item}),
    );
    f.event(
        &mut s.buf,
        "response.content_part.added",
        json!({"item_id": item_id, "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": "", "annotations": []}}),
    );
}

/// A Responses API output message item.
pub(crate) fn message_item(gen: &Generation, text: &str, status: &str) -> Value {
    let content = if text.is_empty() && status != "completed" {
        json!([])
    } else {
        json!([{"type": "output_text", "text": text, "annotations": []}])
    };
    json!({"id": format!("msg_{}", gen.fmt.id), "type": "message", "status": status,
           "role": "assistant", "content": content})
}

/// A Responses API `response` object.
pub(crate) fn response_object(
    gen: &Generation,
    status: &str,
    output: Vec<Value>,
    usage: Option<Value>,
) -> Value {
    json!({
        "id": gen.fmt.id, "object": "response", "created_at": gen.fmt.created,
        "status": status, "model": gen.fmt.model, "output": output,
        "max_output_tokens": gen.job.max_tokens, "usage": usage,
    })
}
