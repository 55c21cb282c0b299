//! `/v1/completions`: the request body (text or token-id prompt) and the parsers of its
//! streamed chunks and whole bodies.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::stream_chunk::{self, Shape};
use super::{
    ask_stream_usage, base_body, prompt_name, ApiError, BodyInfo, BodyInput, ChunkInfo, Prompt,
};

pub(crate) fn body(input: &BodyInput<'_>) -> Result<Map<String, Value>, ApiError> {
    let prompt = match input.prompt {
        Prompt::Text(text) => Some(Value::from(text.as_str())),
        Prompt::TokenIds(ids) => Some(Value::from(ids.clone())),
        Prompt::Body(_) => None,
        other => {
            return Err(ApiError::PromptMismatch {
                api: "completions",
                prompt: prompt_name(other),
            })
        }
    };
    let mut body = base_body(input, |b| {
        if let Some(p) = prompt {
            b.insert("prompt".into(), p);
        }
    });
    ask_stream_usage(input, &mut body);
    Ok(body)
}

pub(crate) fn parse_chunk(data: &[u8]) -> Result<ChunkInfo<'_>, serde_json::Error> {
    stream_chunk::parse(data, Shape::Completions)
}

pub(crate) fn parse_body(data: &[u8]) -> Result<BodyInfo, serde_json::Error> {
    let info = parse_chunk(data)?;
    Ok(BodyInfo {
        tool_calls: Vec::new(),
        text: info.content.map(Cow::into_owned).unwrap_or_default(),
        reasoning: String::new(),
        finish_reason: info.finish_reason.map(Cow::into_owned),
        usage: info.usage,
        error: info.error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_chunks_and_final_empty_text() {
        let c = parse_chunk(
            br#"{"choices":[{"text":" the","index":0,"logprobs":null,"finish_reason":null}]}"#,
        )
        .unwrap();
        assert_eq!(c.content.as_deref(), Some(" the"));
        let last =
            parse_chunk(br#"{"choices": [{"text": "", "index": 0, "finish_reason": "length"}]}"#)
                .unwrap();
        assert!(last.has_choice && !last.has_output());
        assert_eq!(last.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn whole_body() {
        let b = parse_body(br#"{"id":"c","choices":[{"text":" the capital","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":6,"completion_tokens":8,"total_tokens":14}}"#).unwrap();
        assert_eq!(b.text, " the capital");
        assert_eq!(b.usage.unwrap().prompt_tokens, Some(6));
        assert_eq!(b.usage.unwrap().cached_tokens, None);
    }
}
