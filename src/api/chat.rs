//! `/v1/chat/completions`: the request body (messages, `stream_options.include_usage`)
//! and the parsers of its streamed chunks and whole bodies.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::stream_chunk::{self, Shape};
use super::{
    ask_stream_usage, base_body, prompt_name, ApiError, BodyInfo, BodyInput, ChunkInfo, Prompt,
};

pub(crate) fn body(input: &BodyInput<'_>) -> Result<Map<String, Value>, ApiError> {
    let messages = match input.prompt {
        Prompt::Text(text) => Some(json!([{ "role": "user", "content": text }])),
        Prompt::Messages(messages) => Some(Value::Array(messages.clone())),
        Prompt::Body(_) => None,
        other => {
            return Err(ApiError::PromptMismatch {
                api: "chat",
                prompt: prompt_name(other),
            })
        }
    };
    let mut body = base_body(input, |b| {
        if let Some(m) = messages {
            b.insert("messages".into(), m);
        }
    });
    ask_stream_usage(input, &mut body);
    Ok(body)
}

pub(crate) fn parse_chunk(data: &[u8]) -> Result<ChunkInfo<'_>, serde_json::Error> {
    stream_chunk::parse(data, Shape::Chat)
}

pub(crate) fn parse_body(data: &[u8]) -> Result<BodyInfo, serde_json::Error> {
    let info = parse_chunk(data)?;
    let text: String = info.answer_pieces().collect();
    let mut tool_calls = Vec::new();
    for d in &info.tool_deltas {
        super::tools::assemble(&mut tool_calls, d, usize::MAX);
    }
    Ok(BodyInfo {
        tool_calls,
        text,
        reasoning: info.reasoning.map(Cow::into_owned).unwrap_or_default(),
        finish_reason: info.finish_reason.map(Cow::into_owned),
        usage: info.usage,
        error: info.error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Usage;

    #[test]
    fn role_chunk_has_choice_but_no_content() {
        let c = parse_chunk(br#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#).unwrap();
        assert!(c.has_choice);
        assert!(!c.has_output());
        assert_eq!(c.finish_reason, None);
    }

    #[test]
    fn content_and_finish() {
        let c = parse_chunk(br#"{"choices": [{"index": 0, "delta": {"content": "Hi \"you\""}, "finish_reason": "length"}, {"index": 1}]}"#).unwrap();
        assert_eq!(c.content.as_deref(), Some("Hi \"you\""));
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn usage_chunk_with_cached_tokens() {
        let c = parse_chunk(br#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":8}}}"#).unwrap();
        assert!(!c.has_choice);
        assert_eq!(
            c.usage,
            Some(Usage {
                prompt_tokens: Some(10),
                completion_tokens: Some(3),
                cached_tokens: Some(8),
                reasoning_tokens: None,
            })
        );
    }

    #[test]
    fn empty_content_is_a_token_but_the_role_chunk_is_not() {
        let role =
            parse_chunk(br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#)
                .unwrap();
        assert!(role.has_choice && !role.token);
        let special = parse_chunk(
            br#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}"#,
        )
        .unwrap();
        assert!(special.token && !special.has_output());
        let closing =
            parse_chunk(br#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#).unwrap();
        assert!(closing.has_choice && !closing.token);
        let first = parse_chunk(
            br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}"#,
        )
        .unwrap();
        assert!(first.token, "a role chunk with text carries its token");
        let running = parse_chunk(br#"{"choices":[{"index":0,"delta":{"content":" a"}}],"usage":{"prompt_tokens":5,"total_tokens":8,"completion_tokens":3}}"#).unwrap();
        assert_eq!(running.usage.unwrap().completion_tokens, Some(3));
    }

    #[test]
    fn reasoning_tokens_of_the_usage_details() {
        let c = parse_chunk(br#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":6}}}"#).unwrap();
        assert_eq!(c.usage.unwrap().reasoning_tokens, Some(6));
        let b = parse_body(br#"{"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"hmm","content":"Paris"},"finish_reason":"stop"}]}"#).unwrap();
        assert_eq!((b.text.as_str(), b.reasoning.as_str()), ("Paris", "hmm"));
    }

    #[test]
    fn reasoning_counts_as_output() {
        let c = parse_chunk(br#"{"choices":[{"delta":{"reasoning_content":"hmm"}}],"usage":null}"#)
            .unwrap();
        assert!(c.has_output());
        assert_eq!(c.usage, None);
    }

    #[test]
    fn error_objects() {
        assert!(
            parse_chunk(br#"{"error":{"message":"boom","code":500}}"#)
                .unwrap()
                .error
        );
        assert!(
            parse_chunk(br#"{"object":"error","message":"boom"}"#)
                .unwrap()
                .error
        );
        assert!(
            !parse_chunk(br#"{"error":null,"choices":[]}"#)
                .unwrap()
                .error
        );
    }

    #[test]
    fn whole_body() {
        let b = parse_body(br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#).unwrap();
        assert_eq!(b.text, "Paris");
        assert_eq!(b.finish_reason.as_deref(), Some("stop"));
        assert_eq!(b.usage.unwrap().completion_tokens, Some(1));
    }
}
