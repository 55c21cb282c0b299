//! `RequestRecord`: one observed request, the single stream every consumer reads
//! (progress, metrics, store, reports): the shared language of the house, in a leaf that
//! imports nothing of the crate, so that `api`, `metrics`, `store` and `report` never
//! reach the engine. Times are offsets from the run's start instant, in whole
//! microseconds (`RESOLUTION`, the unit the store keeps), so the metrics of a live run
//! and the metrics recomputed from its stored rows read the same numbers.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod facts;
mod phase;
mod read_clock;
mod stream;
mod tools;

pub use facts::RunFacts;
pub use phase::{AnswerCheck, Phase, CHECK_ITEM_BASE};
pub use read_clock::{Clock, ReadClock};
pub use stream::{StreamTokens, TokenSource};
pub use tools::{ToolCall, ToolTally};

/// Most tool calls of one answer a record keeps (more are counted as calls that did not parse).
pub(crate) const MAX_TOOL_CALLS: usize = 64;

/// Longest error text kept in a record.
pub const ERROR_EXCERPT_BYTES: usize = 512;

/// Cuts `bytes` to at most [`ERROR_EXCERPT_BYTES`] on a character boundary.
pub fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_EXCERPT_BYTES * 2)]);
    let mut end = text.len().min(ERROR_EXCERPT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// How a request ended. A failed request is data, never an error that aborts a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// HTTP 200 and a complete, well-formed response.
    Ok,
    /// The connection could not be made (refused, reset before the response, DNS).
    Connect,
    /// Connect, idle-read or total timeout.
    Timeout,
    /// The server answered with a non-200 status (see `http_status`, `error`).
    Http,
    /// The stream ended early: the connection closed without `[DONE]` or a finish reason.
    StreamBroken,
    /// The body or a chunk could not be parsed.
    BadBody,
    /// Never completed because the run was stopped (Ctrl-C, duration with no grace left).
    Cancelled,
    /// HTTP 200 whose stream or body carried an error object (`{"error": ...}`,
    /// `"object": "error"`, `event: error`, `response.failed`).
    ServerError,
    /// Cut by the client: a stream far past the request's output limit (or past the chunk
    /// cap when no limit was sent), or an SSE line/event or a body over its size limit.
    Overlong,
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::Ok,
        Outcome::Connect,
        Outcome::Timeout,
        Outcome::Http,
        Outcome::StreamBroken,
        Outcome::BadBody,
        Outcome::Cancelled,
        Outcome::ServerError,
        Outcome::Overlong,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Connect => "connect",
            Outcome::Timeout => "timeout",
            Outcome::Http => "http",
            Outcome::StreamBroken => "stream_broken",
            Outcome::BadBody => "bad_body",
            Outcome::Cancelled => "cancelled",
            Outcome::ServerError => "server_error",
            Outcome::Overlong => "overlong",
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == text)
    }
}

/// Token counts as the server reported them in `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`; `None` when the server did not say.
    pub cached_tokens: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens` (Responses:
    /// `output_tokens_details`); `None` when the server did not say.
    #[serde(default)]
    pub reasoning_tokens: Option<u32>,
}

/// The TLS handshake of a connection a request opened. The lean client times it apart
/// from the TCP connect; on the reqwest path it is inside `connect` and not told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsHandshake {
    /// From the established TCP connection to the handshake's end (a part of `connect`).
    pub took: Duration,
    /// The server took up a session of an earlier connection (session resumption): an
    /// abbreviated handshake, no certificate sent or verified.
    pub resumed: bool,
}

/// One request, as observed by the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Position of the request in the run's request list (warmup and measured alike).
    pub index: u64,
    /// Which item of the run's request set was sent (several requests may reuse one).
    pub item: u64,
    pub phase: Phase,
    /// When the schedule wanted the request sent (closed loop: when its slot freed).
    pub intended: Duration,
    /// When the request was handed to an established connection (after its connection
    /// setup, if it opened one; a retry on a fresh connection is timed from the retry).
    pub sent: Duration,
    /// How long setting up the connection took (TCP connect, and the TLS handshake of an
    /// https:// connection) when this request opened one; `None` when it was sent on a
    /// connection already open.
    #[serde(default)]
    pub connect: Option<Duration>,
    /// The TLS handshake of the connection this request opened (the lean client's https://
    /// connections); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsHandshake>,
    /// Arrival of the first chunk that carried any choice/delta (vLLM's and EvalScope's TTFT point).
    pub first_chunk: Option<Duration>,
    /// Arrival of every chunk with non-empty output content, in order. The first is perfplan's TTFT point.
    pub content_times: Vec<Duration>,
    /// Arrival of the last chunk that carried any choice (vLLM's latency end point).
    #[serde(default)]
    pub last_chunk: Option<Duration>,
    /// Arrival of the first chunk with answer output (content or a tool call, not
    /// reasoning): the end of `ttfo`. Equals the first content time without reasoning.
    #[serde(default)]
    pub first_answer: Option<Duration>,
    /// When the last byte of the response arrived (or the failure was observed).
    pub end: Duration,
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    /// First few hundred bytes of an error body or message.
    pub error: Option<String>,
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// The answer's text (content and tool-call text, not reasoning), kept so the client
    /// can count its tokens and multi-turn runs can append it to the conversation; at
    /// most the endpoint's `limits.max_text` bytes (see `output_bytes`).
    pub output_text: String,
    /// The reasoning text (`reasoning_content` / `reasoning`, Responses' reasoning
    /// deltas), kept apart from the answer within the same bound.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning_text: String,
    /// Bytes of generated text received (choice 0), all of it, also beyond what
    /// `output_text` keeps; `None` for APIs that generate no text (embeddings, rerank).
    /// `Some(0)` on a success is a response with no output at all.
    #[serde(default)]
    pub output_bytes: Option<u64>,
    /// Output tokens (reasoning and answer) counted by the client's tokenizer (filled in
    /// after the engine).
    pub client_output_tokens: Option<u32>,
    /// The reasoning part of `client_output_tokens` (0 when no reasoning text arrived).
    #[serde(default)]
    pub client_reasoning_tokens: Option<u32>,
    /// A streamed response's chunk and token counts (`None`: not streamed, or a row
    /// written before they were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_tokens: Option<StreamTokens>,
    /// Input tokens counted by the client (as prepared with the request).
    #[serde(default)]
    pub client_input_tokens: Option<u32>,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Which of the endpoint's replicas (`urls`, in the order written) the request went to;
    /// `None` for an endpoint with one URL (and in rows written before replicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
    /// A tool-calling run's request: its round and its calls' parse tally (`None` for
    /// every other run, and in rows written before schema 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolTally>,
    /// The answer's tool calls, assembled from the stream (at most `MAX_TOOL_CALLS`, each
    /// argument text within the endpoint's `limits.max_text`). Not stored in rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A mix's class of the request (its index in the run's mix); `None` for a run that is
    /// not a mix (and in rows written before mixes).
    pub class: Option<u16>,
    /// How the answer's bytes were timed (`None`: no answer byte was read, or a row
    /// written before schema 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_clock: Option<ReadClock>,
    /// A golden request's check (`Phase::Check`); `None` for every other request (and in
    /// rows written before schema 18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerCheck>,
    /// How long after its arrival each content chunk was read (`content_times`' order; the
    /// delay of the read that delivered it, zero when not timed by the kernel). Empty when
    /// every delay is zero, and in rows written before schema 19. See `ReadClock`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content_delays: Vec<Duration>,
    /// A stream was asked for and the server answered HTTP 200 with a whole body: no chunk
    /// was timed (the run's verdict says the stream was not observed). Not stored in rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstreamed: bool,
    /// With `Endpoint::with_raw_responses`: the response as received, each SSE event's
    /// data (or the whole body). Never stored; `run --debug` logs it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raw: Vec<String>,
}

impl Default for RequestRecord {
    /// An empty measured request that succeeded at time zero (for tests and builders).
    fn default() -> Self {
        RequestRecord {
            index: 0,
            item: 0,
            phase: Phase::Measured,
            intended: Duration::ZERO,
            sent: Duration::ZERO,
            connect: None,
            tls: None,
            first_chunk: None,
            content_times: Vec::new(),
            last_chunk: None,
            first_answer: None,
            end: Duration::ZERO,
            outcome: Outcome::Ok,
            http_status: None,
            error: None,
            finish_reason: None,
            usage: Usage::default(),
            output_text: String::new(),
            reasoning_text: String::new(),
            output_bytes: None,
            client_output_tokens: None,
            client_reasoning_tokens: None,
            stream_tokens: None,
            client_input_tokens: None,
            request_bytes: 0,
            response_bytes: 0,
            replica: None,
            class: None,
            read_clock: None,
            answer: None,
            content_delays: Vec::new(),
            tools: None,
            tool_calls: Vec::new(),
            unstreamed: false,
            raw: Vec::new(),
        }
    }
}

/// The resolution of a record's times: the engine truncates every time to it as the
/// request completes (`truncate_to_resolution`), and the store keeps it exactly.
pub const RESOLUTION: Duration = Duration::from_micros(1);

fn truncate(t: Duration) -> Duration {
    Duration::from_micros(u64::try_from(t.as_micros()).unwrap_or(u64::MAX))
}

impl RequestRecord {
    /// Applies `f` to every instant of the record (times since the run's start), e.g. to
    /// move a record to another time base. The one list of a record's instants: a new
    /// instant field is added here (the destructuring below does not compile without it).
    pub(crate) fn map_times(&mut self, f: impl Fn(Duration) -> Duration) {
        let RequestRecord {
            index: _,
            item: _,
            phase: _,
            intended,
            sent,
            connect: _, // a duration, not an instant
            tls: _,     // a duration, not an instant
            first_chunk,
            content_times,
            last_chunk,
            first_answer,
            end,
            outcome: _,
            http_status: _,
            error: _,
            finish_reason: _,
            usage: _,
            output_text: _,
            reasoning_text: _,
            output_bytes: _,
            client_output_tokens: _,
            client_reasoning_tokens: _,
            stream_tokens: _,
            client_input_tokens: _,
            request_bytes: _,
            response_bytes: _,
            replica: _,
            class: _,
            read_clock: _,
            answer: _,
            content_delays: _, // durations, not instants
            tools: _,
            tool_calls: _,
            unstreamed: _,
            raw: _,
        } = self;
        *intended = f(*intended);
        *sent = f(*sent);
        *first_chunk = first_chunk.map(&f);
        content_times.iter_mut().for_each(|t| *t = f(*t));
        *last_chunk = last_chunk.map(&f);
        *first_answer = first_answer.map(&f);
        *end = f(*end);
    }

    /// Truncates every time to `RESOLUTION` (whole microseconds), as stored.
    pub fn truncate_to_resolution(&mut self) {
        self.map_times(truncate);
        self.connect = self.connect.map(truncate);
        self.content_delays
            .iter_mut()
            .for_each(|d| *d = truncate(*d));
        if self.content_delays.iter().all(Duration::is_zero) {
            self.content_delays.clear();
        }
        if let Some(tls) = &mut self.tls {
            tls.took = truncate(tls.took);
        }
        if let Some(clock) = &mut self.read_clock {
            clock.map_delays(truncate);
        }
    }

    /// Time to first token under perfplan's definition: the first non-empty content chunk.
    pub fn ttft(&self) -> Option<Duration> {
        let first = *self.content_times.first()?;
        Some(first.saturating_sub(self.sent))
    }

    /// Time to the first answer token after any reasoning (AIPerf's TTFO): the first
    /// content or tool-call chunk. Equals [`RequestRecord::ttft`] when there is no reasoning.
    pub fn ttfo(&self) -> Option<Duration> {
        Some(self.first_answer?.saturating_sub(self.sent))
    }

    /// A success that carried no output at all (no content, reasoning or tool call).
    pub fn no_output(&self) -> bool {
        self.outcome == Outcome::Ok && self.output_bytes == Some(0)
    }

    /// Sent → last content chunk (streamed) or end (non-streamed).
    pub fn latency(&self) -> Duration {
        self.content_times
            .last()
            .copied()
            .unwrap_or(self.end)
            .saturating_sub(self.sent)
    }

    /// When the request began, its connection setup included: `sent − connect`. The
    /// start of TTFT and latency under the vLLM and EvalScope definitions, whose timers
    /// run before those clients open a connection.
    pub fn started(&self) -> Duration {
        self.sent.saturating_sub(self.connect.unwrap_or_default())
    }

    /// Send lateness: when the request began (its connection setup not counted) minus
    /// its intended send time.
    pub fn lateness(&self) -> Duration {
        self.started().saturating_sub(self.intended)
    }

    /// Input tokens: the server's figure, else the client's count. The flag says "estimated".
    pub fn input_tokens(&self) -> Option<(u32, bool)> {
        match (self.usage.prompt_tokens, self.client_input_tokens) {
            (Some(n), _) => Some((n, false)),
            (None, Some(n)) => Some((n, true)),
            (None, None) => None,
        }
    }

    /// Output tokens: the server's figure, else the client's count. The flag says "estimated".
    pub fn output_tokens(&self) -> Option<(u32, bool)> {
        match (self.usage.completion_tokens, self.client_output_tokens) {
            (Some(n), _) => Some((n, false)),
            (None, Some(n)) => Some((n, true)),
            (None, None) => None,
        }
    }

    /// Reasoning tokens: the server's `completion_tokens_details.reasoning_tokens`, else
    /// the client's count of the reasoning text (0 when none arrived).
    pub fn reasoning_tokens(&self) -> Option<u32> {
        self.usage.reasoning_tokens.or(self.client_reasoning_tokens)
    }

    /// Answer tokens: output tokens (`output_tokens`) less reasoning tokens.
    pub fn answer_tokens(&self) -> Option<u32> {
        let (n, _) = self.output_tokens()?;
        Some(n.saturating_sub(self.reasoning_tokens()?))
    }

    /// The client's own count of the answer's tokens (its tokenizer's, not the server's).
    pub fn client_answer_tokens(&self) -> Option<u32> {
        let all = self.client_output_tokens?;
        Some(all.saturating_sub(self.client_reasoning_tokens.unwrap_or(0)))
    }

    /// The client's own count of the output tokens it received, never the server's
    /// `usage` total: a stream's running per-chunk usage when the server sent one
    /// (`TokenSource::Usage`), else the larger of the client tokenizer's count of the
    /// text and the stream's chunk count (one token per chunk that carries a token
    /// slot: a chunk with empty text still brought a token, and a chunk of several
    /// tokens is covered by the tokenizer's count). `None` when the client has neither
    /// (a non-streamed answer without the model's tokenizer). What a per-request
    /// conservation check holds against `usage.completion_tokens`: exact with per-chunk
    /// usage; without it a lower bound where the server merged tokens whose text the
    /// tokenizer does not restore (vLLM merges a lagging stream's tokens into one chunk,
    /// and its special tokens have no text), so such a check needs per-chunk usage or a
    /// tolerance.
    pub fn received_output_tokens(&self) -> Option<u32> {
        match &self.stream_tokens {
            Some(s) if s.source == TokenSource::Usage => Some(s.total),
            Some(s) => Some(
                self.client_output_tokens
                    .map_or(s.total, |n| n.max(s.total)),
            ),
            None => self.client_output_tokens,
        }
    }
}

#[cfg(test)]
mod tests;
