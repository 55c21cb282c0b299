//! Wire format of streamed chunks (vLLM/OpenAI SSE) and of the Responses API events, with
//! the per-request constant parts serialised once so that each chunk is a few copies.
//! Output token k of a request is the word `WORDS[(offset + k) % 64]` with a leading space
//! (one token each under the approximation), or nothing at all when it is a special token
//! (`empty_chunks`: tokens N, 2N, …). Knows nothing about timing.

use bytes::{BufMut, BytesMut};
use serde_json::{json, Value};

use super::request::Api;

const WORDS: [&str; 64] = [
    "the", "model", "serves", "tokens", "quickly", "and", "each", "request", "waits", "for", "its",
    "turn", "in", "a", "batch", "while", "cache", "blocks", "keep", "shared", "prefix", "data",
    "so", "that", "prompts", "repeat", "without", "cost", "when", "load", "grows", "latency",
    "rises", "slowly", "but", "steady", "streams", "flow", "from", "server", "to", "client", "who",
    "counts", "time", "between", "every", "chunk", "measured", "with", "care", "under", "many",
    "parallel", "users", "on", "one", "machine", "our", "plan", "runs", "again", "today", "well",
];

/// Which output tokens are special (no text): every `every`th (tokens `every`,
/// `2 × every`, … counted from 1); none when 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Empty {
    pub every: u32,
    /// A golden request's answer (`golden`): output token k is piece k (JSON-escaped),
    /// no token is special.
    pub answer: Option<std::sync::Arc<[String]>>,
}

impl Empty {
    /// Whether output token `k` (from 0) is special.
    pub fn is_empty(&self, k: u32) -> bool {
        self.every > 0 && (u64::from(k) + 1) % u64::from(self.every) == 0
    }
}

/// Appends the text of output tokens `from..to` (JSON-safe, no escaping needed).
pub(crate) fn put_words(buf: &mut BytesMut, offset: u64, (from, to): (u32, u32), empty: &Empty) {
    if let Some(pieces) = &empty.answer {
        for piece in pieces.iter().take(to as usize).skip(from as usize) {
            buf.put_slice(piece.as_bytes());
        }
        return;
    }
    for k in (from..to).filter(|&k| !empty.is_empty(k)) {
        let w = WORDS[((offset + u64::from(k)) % WORDS.len() as u64) as usize];
        buf.put_u8(b' ');
        buf.put_slice(w.as_bytes());
    }
}

/// The text of output tokens `from..to`.
pub(crate) fn words(offset: u64, span: (u32, u32), empty: &Empty) -> String {
    let mut b = BytesMut::new();
    put_words(&mut b, offset, span, empty);
    String::from_utf8_lossy(&b).into_owned()
}

/// Usage numbers of a response.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UsageNumbers {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
    /// The reasoning part of `completion` (`completion_tokens_details` when above 0).
    pub reasoning: u64,
}

/// `usage` in chat/completions shape; `cached` false leaves out `prompt_tokens_details`.
pub(crate) fn usage_json(u: UsageNumbers, cached: bool) -> Value {
    let mut v = json!({
        "prompt_tokens": u.prompt,
        "total_tokens": u.prompt + u.completion,
        "completion_tokens": u.completion,
    });
    if cached {
        v["prompt_tokens_details"] = json!({"cached_tokens": u.cached});
    }
    if u.reasoning > 0 {
        v["completion_tokens_details"] = json!({"reasoning_tokens": u.reasoning});
    }
    v
}

/// `usage` in Responses API shape.
pub(crate) fn response_usage_json(u: UsageNumbers) -> Value {
    json!({
        "input_tokens": u.prompt,
        "input_tokens_details": {"cached_tokens": u.cached},
        "output_tokens": u.completion,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.prompt + u.completion,
    })
}

/// One streamed chunk of a choice: its output tokens `span` (a chunk is all reasoning or
/// all answer), its finish reason, and the running usage `(prompt, completion so far)`
/// when the request asked for per-chunk usage.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkOut<'a> {
    pub index: u32,
    pub offset: u64,
    pub span: (u32, u32),
    pub finish: Option<&'a str>,
    pub reasoning: bool,
    pub running: Option<(u64, u64)>,
}

/// `,"usage":{…}` of a per-chunk usage (vLLM's `continuous_usage_stats`).
fn put_running(buf: &mut BytesMut, running: Option<(u64, u64)>) {
    if let Some((prompt, completion)) = running {
        buf.put_slice(b",\"usage\":{\"prompt_tokens\":");
        put_uint(buf, prompt);
        buf.put_slice(b",\"total_tokens\":");
        put_uint(buf, prompt + completion);
        buf.put_slice(b",\"completion_tokens\":");
        put_uint(buf, completion);
        buf.put_u8(b'}');
    }
}

/// Pre-serialised pieces of one streamed response.
pub(crate) struct ChunkFormat {
    pub api: Api,
    pub id: String,
    pub model: String,
    pub created: u64,
    /// `data: {"id":…,"choices":[{"index":` for chat/completions.
    prefix: Vec<u8>,
    /// Responses API event counter.
    pub sequence: u64,
    /// The special tokens, whose text is empty.
    pub empty: Empty,
}

impl ChunkFormat {
    pub(crate) fn new(api: Api, id: String, model: String, created: u64) -> Self {
        let object = match api {
            Api::Chat => "chat.completion.chunk",
            _ => "text_completion",
        };
        let model_json = Value::String(model.clone()).to_string();
        let prefix = format!(
            "data: {{\"id\":\"{id}\",\"object\":\"{object}\",\"created\":{created},\"model\":{model_json},\"choices\":[{{\"index\":"
        )
        .into_bytes();
        ChunkFormat {
            api,
            id,
            model,
            created,
            prefix,
            sequence: 0,
            empty: Empty::default(),
        }
    }

    /// Chat only: the first chunk of a choice, carrying the role (and, with per-chunk
    /// usage, the prompt and no completion tokens yet).
    pub(crate) fn role(&self, buf: &mut BytesMut, index: u32, running: Option<(u64, u64)>) {
        buf.put_slice(&self.prefix);
        put_uint(buf, u64::from(index));
        buf.put_slice(
            b",\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]",
        );
        put_running(buf, running);
        buf.put_slice(b"}\n\n");
    }

    /// A content chunk (see `ChunkOut`).
    pub(crate) fn content(&mut self, buf: &mut BytesMut, c: ChunkOut<'_>) {
        let (index, offset, span, finish) = (c.index, c.offset, c.span, c.finish);
        match self.api {
            Api::Chat | Api::Completions => {
                buf.put_slice(&self.prefix);
                put_uint(buf, u64::from(index));
                buf.put_slice(match (self.api, c.reasoning) {
                    (Api::Chat, true) => b",\"delta\":{\"reasoning_content\":\"",
                    (Api::Chat, false) => b",\"delta\":{\"content\":\"",
                    _ => b",\"text\":\"",
                });
                put_words(buf, offset, span, &self.empty);
                buf.put_slice(if self.api == Api::Chat {
                    b"\"},\"logprobs\":null,\"finish_reason\":"
                } else {
                    b"\",\"logprobs\":null,\"finish_reason\":"
                });
                match finish {
                    Some(f) => {
                        buf.put_u8(b'"');
                        buf.put_slice(f.as_bytes());
                        buf.put_u8(b'"');
                    }
                    None => buf.put_slice(b"null"),
                }
                if self.api == Api::Completions {
                    buf.put_slice(b",\"stop_reason\":null");
                }
                buf.put_slice(b"}]");
                put_running(buf, c.running);
                buf.put_slice(b"}\n\n");
            }
            Api::Responses => {
                buf.put_slice(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":");
                put_uint(buf, self.next_sequence());
                buf.put_slice(b",\"item_id\":\"msg_");
                buf.put_slice(self.id.as_bytes());
                buf.put_slice(b"\",\"output_index\":");
                put_uint(buf, u64::from(index));
                buf.put_slice(b",\"content_index\":0,\"delta\":\"");
                put_words(buf, offset, span, &self.empty);
                buf.put_slice(b"\",\"logprobs\":[]}\n\n");
            }
        }
    }

    /// A chat chunk whose delta carries `tool_calls` (see `tools::deltas`).
    pub(crate) fn tool_chunk(&self, buf: &mut BytesMut, c: ChunkOut<'_>, calls: &Value) {
        buf.put_slice(&self.prefix);
        put_uint(buf, u64::from(c.index));
        buf.put_slice(b",\"delta\":{\"tool_calls\":");
        buf.put_slice(calls.to_string().as_bytes());
        buf.put_slice(b"},\"logprobs\":null,\"finish_reason\":");
        match c.finish {
            Some(f) => {
                buf.put_u8(b'"');
                buf.put_slice(f.as_bytes());
                buf.put_u8(b'"');
            }
            None => buf.put_slice(b"null"),
        }
        buf.put_slice(b"}]");
        put_running(buf, c.running);
        buf.put_slice(b"}\n\n");
    }

    /// The final usage chunk (chat/completions): empty `choices`.
    pub(crate) fn usage(&self, buf: &mut BytesMut, u: UsageNumbers, with_cached: bool) {
        let object = if self.api == Api::Chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        };
        let v = json!({
            "id": self.id, "object": object, "created": self.created, "model": self.model,
            "choices": [], "usage": usage_json(u, with_cached),
        });
        put_data(buf, &v);
    }

    /// An invalid-JSON event (the malformed-chunk fault).
    pub(crate) fn malformed(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.prefix);
        buf.put_slice(b"0,\"delta\":{\"content\":\"\n\n");
    }

    /// A Responses API event `{"type": kind, "sequence_number": …, ...fields}`.
    pub(crate) fn event(&mut self, buf: &mut BytesMut, kind: &str, fields: Value) {
        let mut v = json!({"type": kind, "sequence_number": self.next_sequence()});
        if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), fields) {
            obj.extend(extra);
        }
        buf.put_slice(b"event: ");
        buf.put_slice(kind.as_bytes());
        buf.put_u8(b'\n');
        put_data(buf, &v);
    }

    fn next_sequence(&mut self) -> u64 {
        let s = self.sequence;
        self.sequence += 1;
        s
    }
}

/// `data: {json}\n\n`.
pub(crate) fn put_data(buf: &mut BytesMut, v: &Value) {
    buf.put_slice(b"data: ");
    buf.put_slice(v.to_string().as_bytes());
    buf.put_slice(b"\n\n");
}

/// `data: [DONE]\n\n`.
pub(crate) fn put_done(buf: &mut BytesMut) {
    buf.put_slice(b"data: [DONE]\n\n");
}

fn put_uint(buf: &mut BytesMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.put_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_chunk_is_valid_json() {
        let mut f = ChunkFormat::new(Api::Chat, "chatcmpl-1".into(), "m\"x".into(), 5);
        let mut buf = BytesMut::new();
        let chunk = ChunkOut {
            index: 0,
            offset: 3,
            span: (0, 2),
            finish: Some("length"),
            reasoning: false,
            running: None,
        };
        f.content(&mut buf, chunk);
        let text = String::from_utf8(buf.to_vec()).unwrap();
        let json: Value = serde_json::from_str(text.trim_start_matches("data: ").trim()).unwrap();
        assert_eq!(json["choices"][0]["delta"]["content"], " tokens quickly");
        assert_eq!(json["choices"][0]["finish_reason"], "length");
        assert_eq!(json["model"], "m\"x");
        // Reasoning, a special token's empty text and a running usage, as vLLM sends them.
        f.empty = Empty {
            every: 2,
            answer: None,
        };
        let mut buf = BytesMut::new();
        let running = ChunkOut {
            span: (1, 2),
            finish: None,
            reasoning: true,
            running: Some((7, 2)),
            ..chunk
        };
        f.content(&mut buf, running);
        f.role(&mut buf, 0, Some((7, 0)));
        let text = String::from_utf8(buf.to_vec()).unwrap();
        let events: Vec<Value> = text
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| serde_json::from_str(e.trim_start_matches("data: ")).unwrap())
            .collect();
        assert_eq!(events[0]["choices"][0]["delta"]["reasoning_content"], "");
        assert_eq!(events[0]["usage"]["completion_tokens"], 2);
        assert_eq!(events[0]["usage"]["total_tokens"], 9);
        assert_eq!(events[1]["usage"]["completion_tokens"], 0);
        assert_eq!(
            words(
                3,
                (0, 4),
                &Empty {
                    every: 2,
                    answer: None
                }
            ),
            " tokens and"
        );
    }

    #[test]
    fn every_word_is_one_approximate_token() {
        for w in WORDS {
            assert!(
                w.len() <= 8 && w.bytes().all(|b| b.is_ascii_lowercase()),
                "{w}"
            );
        }
    }
}
