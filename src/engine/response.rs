//! Reading one response as its bytes arrive, for both HTTP clients: the stream's events
//! (or a whole body) into the record, within the endpoint's [`ResponseLimits`], and the
//! outcome from what was read. Every failure becomes a [`Failure`], never a panic.
//!
//! Bounded whatever the server sends: an SSE line or event, a body, the text kept and the
//! `--debug` copy all have a ceiling; a stream past the request's output limit is cut
//! (`overlong`). Token counting and chunk times go on incrementally: the record keeps
//! every output chunk's time (bounded by the chunk cap) and the byte count of all output.

use std::time::{Duration, Instant};

use super::bounds::ResponseLimits;
use super::exchange::Failure;
use super::source::PreparedRequest;
use super::stamped_tcp::Arrival;
use super::target::Endpoint;
use crate::api::{self, ApiKind, SseDecoder, SseEvent};
use crate::record::excerpt;
use crate::record::{Outcome, RequestRecord, Usage};
use crate::units::format_bytes;

/// Most bytes of an error (non-200) body kept to read its message.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// What the stream has said so far.
pub(crate) struct StreamState {
    kind: ApiKind,
    t0: Instant,
    done: bool,
    /// Why reading stopped early (the first reason wins).
    stop: Option<Failure>,
    limits: ResponseLimits,
    /// Output chunks allowed before the stream is cut as overlong.
    chunk_cap: u64,
    max_output_tokens: Option<u32>,
    /// The request asked for per-chunk usage: a choice chunk's usage is the running count.
    running_usage: bool,
    /// Keep each event's data in the record (`--debug`), up to `limits.max_text` bytes.
    raw: bool,
    raw_bytes: usize,
}

impl StreamState {
    fn on_event(&mut self, rec: &mut RequestRecord, ev: SseEvent<'_>, at: Duration) {
        if self.raw {
            keep_raw(rec, &mut self.raw_bytes, self.limits.max_text, ev.data);
        }
        if self.done || self.stop.is_some() {
            return;
        }
        if api::is_done(ev.data) {
            self.done = true;
            return;
        }
        let info = match api::parse_chunk(self.kind, ev.event, ev.data) {
            Ok(info) => info,
            Err(_) if ev.event == Some("error") => {
                self.stop = Some(server_error(ev.data));
                return;
            }
            Err(e) => {
                let error = format!("unparsable chunk ({e}): {}", excerpt(ev.data));
                self.stop = Some(Failure::new(Outcome::BadBody, error));
                return;
            }
        };
        if info.error {
            self.stop = Some(server_error(ev.data));
            return;
        }
        if info.has_choice {
            rec.first_chunk.get_or_insert(at);
            rec.last_chunk = Some(at);
            let running = info
                .usage
                .filter(|_| self.running_usage)
                .and_then(|u| u.completion_tokens);
            let counts = rec.stream_tokens.get_or_insert_with(Default::default);
            counts.on_choice(info.token, running);
        }
        if info.has_output() {
            rec.content_times.push(at);
            if let Some(counts) = &mut rec.stream_tokens {
                counts.on_content();
            }
            if info.has_answer() {
                rec.first_answer.get_or_insert(at);
            }
            let max = self.limits.max_text;
            if let Some(piece) = info.reasoning.as_deref() {
                keep_text(rec, Text::Reasoning, piece, max);
            }
            for piece in info.answer_pieces() {
                keep_text(rec, Text::Answer, piece, max);
            }
            if rec.content_times.len() as u64 > self.chunk_cap {
                self.stop = Some(self.overlong());
                return;
            }
        }
        // A call's pieces (Responses names a call in an event that carries no output).
        for d in &info.tool_deltas {
            api::tools::assemble(&mut rec.tool_calls, d, self.limits.max_text);
        }
        if let Some(f) = info.finish_reason {
            rec.finish_reason = Some(f.into_owned());
        }
        if let Some(u) = info.usage {
            merge_usage(&mut rec.usage, u);
        }
        if info.terminal {
            self.done = true;
        }
    }

    fn overlong(&self) -> Failure {
        let error = match self.max_output_tokens {
            Some(limit) => format!(
                "cut after {} output chunks: the request's output limit is {limit} tokens and \
                 the server went on (endpoint limits: overlong_factor = {}, overlong_slack = {})",
                self.chunk_cap, self.limits.overlong_factor, self.limits.overlong_slack
            ),
            None => format!(
                "cut after {} output chunks: the request sent no output limit (endpoint \
                 limits.max_chunks)",
                self.chunk_cap
            ),
        };
        Failure::new(Outcome::Overlong, error)
    }
}

/// A 200 that carried an error object: its message, or an excerpt of it.
fn server_error(data: &[u8]) -> Failure {
    let error = api::error_message(data).unwrap_or_else(|| excerpt(data));
    Failure::new(Outcome::ServerError, error)
}

/// Which of a record's texts a piece belongs to.
#[derive(Clone, Copy)]
enum Text {
    Answer,
    Reasoning,
}

/// Appends `piece` to the record's answer or reasoning text, each kept up to
/// `max_text` bytes (cut on a character boundary); every byte is counted in
/// `output_bytes`.
fn keep_text(rec: &mut RequestRecord, which: Text, piece: &str, max_text: usize) {
    *rec.output_bytes.get_or_insert(0) += piece.len() as u64;
    let text = match which {
        Text::Answer => &mut rec.output_text,
        Text::Reasoning => &mut rec.reasoning_text,
    };
    let room = max_text.saturating_sub(text.len());
    if room >= piece.len() {
        text.push_str(piece);
    } else if room > 0 {
        let mut end = room;
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        text.push_str(&piece[..end]);
    }
}

/// `--debug`'s copy of the response, bounded like the text; one line says what was left out.
fn keep_raw(rec: &mut RequestRecord, kept: &mut usize, max: usize, data: &[u8]) {
    if *kept > max {
        return;
    }
    *kept += data.len();
    if *kept > max {
        rec.raw.push(format!(
            "[perfplan: the rest of this response is not kept: more than {} (endpoint limits.max_text)]",
            format_bytes(max)
        ));
        return;
    }
    rec.raw.push(String::from_utf8_lossy(data).into_owned());
}

fn merge_usage(into: &mut Usage, u: Usage) {
    into.prompt_tokens = u.prompt_tokens.or(into.prompt_tokens);
    into.completion_tokens = u.completion_tokens.or(into.completion_tokens);
    into.cached_tokens = u.cached_tokens.or(into.cached_tokens);
    into.reasoning_tokens = u.reasoning_tokens.or(into.reasoning_tokens);
}

/// A response being read: the stream's state, or the body of a non-streamed answer.
pub(crate) struct Reading {
    pub status: u16,
    pub streamed: bool,
    /// The request asked for a stream (a whole body then is `RequestRecord::unstreamed`).
    pub asked_stream: bool,
    pub state: StreamState,
    pub decoder: SseDecoder,
    pub body: Vec<u8>,
    /// When the last bytes arrived.
    pub last: Instant,
}

impl Reading {
    /// `(status, streamed)` from the response head; `decoder` is reset and bounded here.
    pub(crate) fn new(
        (status, streamed): (u16, bool),
        req: &PreparedRequest,
        ep: &Endpoint,
        t0: Instant,
        mut decoder: SseDecoder,
    ) -> Reading {
        let limits = ep.limits;
        decoder.reset();
        decoder.set_max_event(limits.max_event);
        Reading {
            status,
            streamed,
            asked_stream: req.stream,
            state: StreamState {
                kind: req.kind,
                t0,
                done: false,
                stop: None,
                limits,
                chunk_cap: limits.chunk_cap(req.max_output_tokens),
                max_output_tokens: req.max_output_tokens,
                running_usage: req.running_usage,
                raw: ep.raw_responses,
                raw_bytes: 0,
            },
            decoder,
            body: Vec::new(),
            last: Instant::now(),
        }
    }

    /// Bytes of the body that arrived at `arrival` (with how long before they were read).
    pub(crate) fn on_data(&mut self, rec: &mut RequestRecord, data: &[u8], arrival: Arrival) {
        let before = rec.content_times.len();
        self.feed(rec, data, arrival.at);
        let first_content = before == 0 && !rec.content_times.is_empty();
        note_delays(rec, before, arrival.delay);
        rec.read_clock.get_or_insert_with(Default::default).on_read(
            arrival.delay,
            arrival.kernel,
            first_content,
        );
    }

    fn feed(&mut self, rec: &mut RequestRecord, data: &[u8], arrived: Instant) {
        self.last = arrived;
        let at = arrived - self.state.t0;
        rec.end = at;
        rec.response_bytes += data.len() as u64;
        if self.broken() {
            return;
        }
        if self.streamed {
            let state = &mut self.state;
            if let Err(e) = self.decoder.feed(data, |ev| state.on_event(rec, ev, at)) {
                state.stop.get_or_insert(too_long(e));
            }
        } else if self.status != 200 {
            let room = ERROR_BODY_BYTES.saturating_sub(self.body.len());
            self.body.extend_from_slice(&data[..data.len().min(room)]);
            if rec.response_bytes > self.state.limits.max_body as u64 {
                // An error body without end: the status is the outcome, read no further.
                self.state.stop = Some(self.http_failure());
            }
        } else if self.body.len() + data.len() > self.state.limits.max_body {
            let error = format!(
                "the response body is larger than {} (endpoint limits.max_body)",
                format_bytes(self.state.limits.max_body)
            );
            self.state.stop = Some(Failure::new(Outcome::Overlong, error));
        } else {
            self.body.extend_from_slice(data);
        }
    }

    /// A non-200 answer, with the message of its (first) body bytes.
    fn http_failure(&self) -> Failure {
        let error = api::error_message(&self.body).unwrap_or_else(|| excerpt(&self.body));
        Failure::new(Outcome::Http, error)
    }

    /// Reading stopped early (an unparsable chunk, an error object, a limit): stop reading.
    pub(crate) fn broken(&self) -> bool {
        self.state.stop.is_some()
    }

    /// The body ended: deliver a pending event.
    pub(crate) fn finish(&mut self, rec: &mut RequestRecord) {
        if self.broken() {
            return;
        }
        if self.streamed {
            let (state, at, before) = (&mut self.state, rec.end, rec.content_times.len());
            if let Err(e) = self.decoder.finish(|ev| state.on_event(rec, ev, at)) {
                state.stop.get_or_insert(too_long(e));
            }
            // A pending event is timed by the last read: its delay is that read's.
            let delay = rec.read_clock.map(|c| c.end_delay).unwrap_or_default();
            note_delays(rec, before, delay);
        } else if self.state.raw {
            let max = self.state.limits.max_text;
            keep_raw(rec, &mut self.state.raw_bytes, max, &self.body);
        }
    }

    /// The request's outcome from what was read.
    pub(crate) fn conclude(&mut self, rec: &mut RequestRecord) -> Result<(), Failure> {
        if let Some(stop) = self.state.stop.take() {
            return Err(stop);
        }
        if self.status != 200 {
            return Err(self.http_failure());
        }
        if self.streamed {
            return stream_outcome(&self.state, rec);
        }
        rec.unstreamed = self.asked_stream;
        whole_body(self.state.kind, &self.body, rec, &self.state.limits)
    }
}

/// The content chunks a read delivered (from index `before` on) were read `delay` after
/// they arrived. The list stays empty while every delay is zero (no allocation for an
/// answer not timed by the kernel), else it has one delay per content chunk.
fn note_delays(rec: &mut RequestRecord, before: usize, delay: Duration) {
    let after = rec.content_times.len();
    if after == before || (delay.is_zero() && rec.content_delays.is_empty()) {
        return;
    }
    rec.content_delays.resize(before, Duration::ZERO);
    rec.content_delays.resize(after, delay);
}

fn too_long(e: api::SseTooLong) -> Failure {
    let error = format!(
        "an SSE line or event longer than {} (endpoint limits.max_event)",
        format_bytes(e.limit)
    );
    Failure::new(Outcome::Overlong, error)
}

fn stream_outcome(state: &StreamState, rec: &RequestRecord) -> Result<(), Failure> {
    if state.done || rec.finish_reason.is_some() {
        return Ok(());
    }
    Err(Failure::new(
        Outcome::StreamBroken,
        "stream closed without [DONE] or finish_reason",
    ))
}

fn whole_body(
    kind: ApiKind,
    body: &[u8],
    rec: &mut RequestRecord,
    limits: &ResponseLimits,
) -> Result<(), Failure> {
    match api::parse_body(kind, body) {
        Err(e) => Err(Failure::new(
            Outcome::BadBody,
            format!("unparsable body ({e}): {}", excerpt(body)),
        )),
        Ok(info) if info.error => Err(server_error(body)),
        Ok(info) => {
            if rec.output_bytes.is_some() {
                keep_text(rec, Text::Reasoning, &info.reasoning, limits.max_text);
                keep_text(rec, Text::Answer, &info.text, limits.max_text);
            }
            rec.finish_reason = info.finish_reason;
            if let Some(u) = info.usage {
                merge_usage(&mut rec.usage, u);
            }
            rec.tool_calls = info.tool_calls;
            rec.tool_calls.truncate(crate::record::MAX_TOOL_CALLS);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_kept_up_to_the_cap_and_counted_beyond_it() {
        let mut rec = RequestRecord {
            output_bytes: Some(0),
            ..RequestRecord::default()
        };
        for _ in 0..10 {
            keep_text(&mut rec, Text::Answer, "é€a", 8);
        }
        // 6 bytes, then the 2 of "é" that fit in 8: cut on a character boundary.
        assert_eq!(rec.output_text, "é€aé");
        assert_eq!(rec.output_bytes, Some(60));
        let mut rec = RequestRecord::default();
        keep_text(&mut rec, Text::Answer, "ab€", 3);
        assert_eq!(
            (rec.output_text.as_str(), rec.output_bytes),
            ("ab", Some(5))
        );
        // Reasoning is kept apart, within its own bound, and counted in the same bytes.
        keep_text(&mut rec, Text::Reasoning, "hmm hm", 3);
        assert_eq!(
            (rec.reasoning_text.as_str(), rec.output_bytes),
            ("hmm", Some(11))
        );
    }

    #[test]
    fn every_content_chunk_keeps_the_delay_of_the_read_that_delivered_it() {
        let ms = Duration::from_millis;
        let mut rec = RequestRecord::default();
        let read = |rec: &mut RequestRecord, chunks: usize, delay: Duration| {
            let before = rec.content_times.len();
            rec.content_times.extend(std::iter::repeat_n(ms(1), chunks));
            note_delays(rec, before, delay);
        };
        read(&mut rec, 2, Duration::ZERO);
        read(&mut rec, 0, ms(9)); // a read without a content chunk (a head, a usage chunk)
        assert!(rec.content_delays.is_empty(), "zeros are kept as none");
        read(&mut rec, 1, ms(3));
        read(&mut rec, 2, Duration::ZERO);
        read(&mut rec, 1, ms(1));
        assert_eq!(
            rec.content_delays,
            vec![ms(0), ms(0), ms(3), ms(0), ms(0), ms(1)]
        );
    }

    #[test]
    fn the_debug_copy_is_bounded_with_one_note() {
        let mut rec = RequestRecord::default();
        let mut kept = 0;
        for _ in 0..100 {
            keep_raw(&mut rec, &mut kept, 10, b"0123");
        }
        assert_eq!(rec.raw.len(), 3);
        assert!(rec.raw[2].contains("not kept"), "{:?}", rec.raw);
    }
}
