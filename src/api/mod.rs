//! Request bodies and response parsing for the OpenAI APIs (chat, completions, responses,
//! embeddings, rerank), and the SSE decoder. Honours `reject_fields`. Knows nothing about
//! plans, scheduling or storage.
//!
//! Parsing is built for the engine's hot path: one streamed event is parsed with borrowing
//! serde structs that keep only the fields a metric needs ([`ChunkInfo`]); nothing else is
//! allocated.

pub mod chat;
pub mod completions;
pub mod embeddings;
mod error_body;
pub mod golden;
pub mod models;
mod output_limit;
pub mod prompt;
pub mod rerank;
pub mod responses;
mod scan;
pub mod sse;
mod stream_chunk;
pub mod tools;
mod wire;

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::{Map, Value};

pub use error_body::error_message;
pub use output_limit::{body_reads, output_limit};
pub use prompt::Prompt;
pub use sse::{SseDecoder, SseEvent, SseTooLong};

use crate::record::Usage;

/// Which OpenAI API a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiKind {
    Chat,
    Completions,
    Responses,
    Embeddings,
    Rerank,
}

impl ApiKind {
    pub const ALL: [ApiKind; 5] = [
        ApiKind::Chat,
        ApiKind::Completions,
        ApiKind::Responses,
        ApiKind::Embeddings,
        ApiKind::Rerank,
    ];

    /// The request path under the endpoint's base URL.
    pub fn path(self) -> &'static str {
        match self {
            ApiKind::Chat => "/v1/chat/completions",
            ApiKind::Completions => "/v1/completions",
            ApiKind::Responses => "/v1/responses",
            ApiKind::Embeddings => "/v1/embeddings",
            ApiKind::Rerank => "/v1/rerank",
        }
    }

    /// The name used in plans (`api = "chat"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApiKind::Chat => "chat",
            ApiKind::Completions => "completions",
            ApiKind::Responses => "responses",
            ApiKind::Embeddings => "embeddings",
            ApiKind::Rerank => "rerank",
        }
    }

    pub fn parse(text: &str) -> Option<ApiKind> {
        ApiKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// Whether the API can stream its answer as server-sent events.
    pub fn can_stream(self) -> bool {
        matches!(
            self,
            ApiKind::Chat | ApiKind::Completions | ApiKind::Responses
        )
    }
}

/// Why a request body could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the {api} API cannot send a {prompt} prompt")]
    PromptMismatch {
        api: &'static str,
        prompt: &'static str,
    },
    #[error("could not serialize the {api} request body")]
    Serialize {
        api: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// Everything one request body is made of. The suite has already chosen the OpenAI
/// field names (`max_tokens`, `temperature`, `ignore_eos`, extra fields, ...).
#[derive(Debug, Clone, Copy)]
pub struct BodyInput<'a> {
    pub model: &'a str,
    pub prompt: &'a Prompt,
    /// Request fields, sent as given (nothing is added that is not here).
    pub fields: &'a Map<String, Value>,
    pub stream: bool,
    /// Ask for a usage object at the end of a stream (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Ask for a running usage on every chunk too (`stream_options.continuous_usage_stats`,
    /// vLLM's per-chunk usage); only with `include_usage` on a stream.
    pub continuous_usage: bool,
    /// Top-level fields this server must never receive (also `stream_options`).
    pub reject_fields: &'a [String],
}

/// Builds the request body of `kind`: returns the request path and the JSON bytes.
pub fn build_body(kind: ApiKind, input: &BodyInput<'_>) -> Result<(&'static str, Bytes), ApiError> {
    let mut body = match kind {
        ApiKind::Chat => chat::body(input)?,
        ApiKind::Completions => completions::body(input)?,
        ApiKind::Responses => responses::body(input)?,
        ApiKind::Embeddings => embeddings::body(input)?,
        ApiKind::Rerank => rerank::body(input)?,
    };
    for field in input.reject_fields {
        body.remove(field.as_str());
    }
    let bytes = serde_json::to_vec(&body).map_err(|source| ApiError::Serialize {
        api: kind.as_str(),
        source,
    })?;
    Ok((kind.path(), Bytes::from(bytes)))
}

/// Asks a streamed chat or completions answer to end with usage
/// (`stream_options.include_usage`), and to carry a running usage on every chunk
/// (`continuous_usage_stats`), when the input says so. Never on a request that does not
/// stream (vLLM answers `stream_options` without `stream: true` with HTTP 400).
pub(crate) fn ask_stream_usage(input: &BodyInput<'_>, body: &mut Map<String, Value>) {
    if input.stream && input.include_usage {
        let options = match input.continuous_usage {
            true => serde_json::json!({ "include_usage": true, "continuous_usage_stats": true }),
            false => serde_json::json!({ "include_usage": true }),
        };
        body.insert("stream_options".into(), options);
    }
}

/// Starts a body: `model`, then the prompt part given by `prompt_part` (or the dataset's
/// whole body), then the fields, then `stream`.
pub(crate) fn base_body(
    input: &BodyInput<'_>,
    prompt_part: impl FnOnce(&mut Map<String, Value>),
) -> Map<String, Value> {
    let mut body = match input.prompt {
        Prompt::Body(given) => {
            let mut body = given.clone();
            if !body.contains_key("model") {
                body.insert("model".into(), Value::from(input.model));
            }
            body
        }
        _ => {
            let mut body = Map::new();
            body.insert("model".into(), Value::from(input.model));
            prompt_part(&mut body);
            body
        }
    };
    for (k, v) in input.fields {
        body.insert(k.clone(), v.clone());
    }
    if input.stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    body
}

pub(crate) fn prompt_name(prompt: &Prompt) -> &'static str {
    match prompt {
        Prompt::Text(_) => "text",
        Prompt::TokenIds(_) => "token-id",
        Prompt::Messages(_) => "messages",
        Prompt::Body(_) => "whole-body",
        Prompt::Embedding(_) => "embedding",
        Prompt::Rerank { .. } => "rerank",
    }
}

/// What one streamed event says, as far as the metrics care.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ChunkInfo<'a> {
    /// The event carried choice 0 (vLLM's and EvalScope's TTFT point).
    pub has_choice: bool,
    /// Choice 0 carried a token slot: any output, or a text field present though empty
    /// (`"content": ""`, a special token's chunk in vLLM), but not the opening chunk that
    /// only names the role nor a closing chunk with an empty delta (see
    /// `record::TokenSource::Chunks`).
    pub token: bool,
    /// Non-empty output text of choice 0 (`index` 0; with `n > 1` other choices are not timed).
    pub content: Option<Cow<'a, str>>,
    /// Non-empty reasoning text of choice 0 (`reasoning_content` / `reasoning`).
    pub reasoning: Option<Cow<'a, str>>,
    /// Non-empty tool-call text of choice 0: function names and argument fragments
    /// (`tool_calls[].function`, Responses' `response.function_call_arguments.delta`).
    pub tool: Option<Cow<'a, str>>,
    /// The same tool-call pieces with their call's `index` and `id` (see [`ToolDelta`]);
    /// empty (no allocation) for every chunk without a tool call.
    pub tool_deltas: Vec<ToolDelta<'a>>,
    pub finish_reason: Option<Cow<'a, str>>,
    pub usage: Option<Usage>,
    /// An error object (`{"error": ...}`, `"object": "error"`, `response.failed`).
    pub error: bool,
    /// The event ends the stream by itself (Responses' `response.completed`).
    pub terminal: bool,
}

impl ChunkInfo<'_> {
    /// Whether the event carried output the server generated (content, reasoning or a
    /// tool call): perfplan's TTFT point and an inter-token gap.
    pub(crate) fn has_output(&self) -> bool {
        self.has_answer() || self.reasoning.is_some()
    }

    /// Whether the event carried answer output (content or a tool call, not reasoning):
    /// the time to the first of them is `ttfo`.
    pub(crate) fn has_answer(&self) -> bool {
        self.content.is_some() || self.tool.is_some()
    }

    /// The event's answer text pieces in the order a reader sees them: content, then
    /// tool-call text (reasoning is `reasoning`, apart).
    pub(crate) fn answer_pieces(&self) -> impl Iterator<Item = &str> {
        [&self.content, &self.tool]
            .into_iter()
            .filter_map(|p| p.as_deref())
    }
}

/// One piece of one tool call in a streamed event: which call (`index`), and whichever
/// of its `id`, name and arguments fragment the event carried (see `tools::assemble`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ToolDelta<'a> {
    pub index: u32,
    pub id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub arguments: Option<Cow<'a, str>>,
}

/// What a non-streamed response body says.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct BodyInfo {
    /// The answer's text (content and tool-call text).
    pub text: String,
    /// The reasoning text.
    pub reasoning: String,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    pub error: bool,
    /// The answer's tool calls.
    pub tool_calls: Vec<crate::record::ToolCall>,
}

/// Parses the data of one SSE event of `kind`. `event` is the SSE event name, if any.
pub(crate) fn parse_chunk<'a>(
    kind: ApiKind,
    event: Option<&str>,
    data: &'a [u8],
) -> Result<ChunkInfo<'a>, serde_json::Error> {
    let mut info = match kind {
        ApiKind::Chat => chat::parse_chunk(data)?,
        ApiKind::Completions => completions::parse_chunk(data)?,
        ApiKind::Responses => responses::parse_chunk(data)?,
        // These APIs do not stream; read the event like a whole body.
        ApiKind::Embeddings | ApiKind::Rerank => {
            let body = parse_body(kind, data)?;
            ChunkInfo {
                usage: body.usage,
                error: body.error,
                ..ChunkInfo::default()
            }
        }
    };
    if event == Some("error") {
        info.error = true;
    }
    Ok(info)
}

/// Parses a whole (non-streamed) response body of `kind`.
pub(crate) fn parse_body(kind: ApiKind, body: &[u8]) -> Result<BodyInfo, serde_json::Error> {
    match kind {
        ApiKind::Chat => chat::parse_body(body),
        ApiKind::Completions => completions::parse_body(body),
        ApiKind::Responses => responses::parse_body(body),
        ApiKind::Embeddings => embeddings::parse_body(body),
        ApiKind::Rerank => rerank::parse_body(body),
    }
}

/// Whether an SSE data payload is the end-of-stream marker.
pub(crate) fn is_done(data: &[u8]) -> bool {
    data.trim_ascii() == b"[DONE]"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn build(
        kind: ApiKind,
        prompt: &Prompt,
        f: &Map<String, Value>,
        stream: bool,
        reject: &[String],
    ) -> Value {
        let input = BodyInput {
            model: "m",
            prompt,
            fields: f,
            stream,
            include_usage: true,
            continuous_usage: false,
            reject_fields: reject,
        };
        let (path, bytes) = build_body(kind, &input).unwrap();
        assert_eq!(path, kind.path());
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn chat_stream_sets_include_usage_and_drops_rejected() {
        let f = fields(json!({"max_tokens": 8, "seed": 1, "ignore_eos": true}));
        let body = build(
            ApiKind::Chat,
            &Prompt::Text("hi".into()),
            &f,
            true,
            &["seed".into()],
        );
        assert_eq!(
            body,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                   "max_tokens": 8, "ignore_eos": true, "stream": true,
                   "stream_options": {"include_usage": true}})
        );
    }

    #[test]
    fn nothing_is_sent_that_was_not_given() {
        let body = build(
            ApiKind::Chat,
            &Prompt::Text("hi".into()),
            &Map::new(),
            false,
            &[],
        );
        assert_eq!(
            body,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        );
    }

    #[test]
    fn continuous_usage_is_asked_only_on_a_stream() {
        let p = Prompt::Text("x".into());
        let map = Map::new();
        let input = |stream| BodyInput {
            model: "m",
            prompt: &p,
            fields: &map,
            stream,
            include_usage: stream,
            continuous_usage: true,
            reject_fields: &[],
        };
        let body = |i: BodyInput<'_>| -> Value {
            serde_json::from_slice(&build_body(ApiKind::Completions, &i).unwrap().1).unwrap()
        };
        assert_eq!(
            body(input(true))["stream_options"],
            json!({"include_usage": true, "continuous_usage_stats": true})
        );
        assert!(body(input(false)).get("stream_options").is_none());
        let rejected = ["stream_options".to_string()];
        let mut i = input(true);
        i.reject_fields = &rejected;
        assert!(body(i).get("stream_options").is_none());
    }

    #[test]
    fn stream_options_can_be_rejected() {
        let rej = vec!["stream_options".to_string()];
        let body = build(
            ApiKind::Chat,
            &Prompt::Text("x".into()),
            &Map::new(),
            true,
            &rej,
        );
        assert!(body.get("stream_options").is_none());
        assert_eq!(body["stream"], json!(true));
    }

    #[test]
    fn completions_token_ids_are_an_array() {
        let body = build(
            ApiKind::Completions,
            &Prompt::TokenIds(vec![1, 2, 3]),
            &Map::new(),
            true,
            &[],
        );
        assert_eq!(body["prompt"], json!([1, 2, 3]));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
    }

    #[test]
    fn whole_body_prompt_merges_fields() {
        let given = fields(json!({"model": "x", "messages": [], "temperature": 1.0}));
        let f = fields(json!({"temperature": 0.0, "max_tokens": 4}));
        let body = build(ApiKind::Chat, &Prompt::Body(given), &f, false, &[]);
        assert_eq!(
            body,
            json!({"model": "x", "messages": [], "temperature": 0.0, "max_tokens": 4})
        );
    }

    #[test]
    fn embeddings_and_rerank_bodies() {
        let e = build(
            ApiKind::Embeddings,
            &Prompt::Embedding(vec!["a".into(), "b".into()]),
            &Map::new(),
            false,
            &[],
        );
        assert_eq!(e, json!({"model": "m", "input": ["a", "b"]}));
        let r = build(
            ApiKind::Rerank,
            &Prompt::Rerank {
                query: "q".into(),
                documents: vec!["d".into()],
            },
            &Map::new(),
            false,
            &[],
        );
        assert_eq!(r, json!({"model": "m", "query": "q", "documents": ["d"]}));
    }

    #[test]
    fn mismatched_prompt_is_an_error() {
        let input = BodyInput {
            model: "m",
            prompt: &Prompt::TokenIds(vec![1]),
            fields: &Map::new(),
            stream: false,
            include_usage: false,
            continuous_usage: false,
            reject_fields: &[],
        };
        assert!(build_body(ApiKind::Chat, &input).is_err());
        assert!(build_body(ApiKind::Embeddings, &input).is_err());
    }

    #[test]
    fn api_names_round_trip() {
        for k in ApiKind::ALL {
            assert_eq!(ApiKind::parse(k.as_str()), Some(k));
        }
    }
}
