//! `/v1/responses` (OpenAI Responses API): the request body (`input`) and the parsers of
//! its typed stream events and whole bodies. A stream ends with `response.completed`
//! (or `response.incomplete`), not `[DONE]`.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::{is_error, non_empty, UsageWire};
use super::{base_body, prompt_name, ApiError, BodyInfo, BodyInput, ChunkInfo, Prompt};

pub(crate) fn body(input: &BodyInput<'_>) -> Result<Map<String, Value>, ApiError> {
    let value = match input.prompt {
        Prompt::Text(text) => Some(Value::from(text.as_str())),
        Prompt::Messages(messages) => Some(Value::Array(messages.clone())),
        Prompt::Body(_) => None,
        other => {
            return Err(ApiError::PromptMismatch {
                api: "responses",
                prompt: prompt_name(other),
            })
        }
    };
    Ok(base_body(input, |b| {
        if let Some(v) = value {
            b.insert("input".into(), v);
        }
    }))
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    response: Option<ResponseObject<'a>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(borrow, default)]
    object: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ResponseObject<'a> {
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(borrow, default)]
    incomplete_details: Option<Incomplete<'a>>,
}

#[derive(Deserialize)]
struct Incomplete<'a> {
    #[serde(borrow, default)]
    reason: Option<Cow<'a, str>>,
}

/// Maps a response's status to a chat-style finish reason.
fn finish_of(r: &ResponseObject<'_>) -> Option<Cow<'static, str>> {
    match r.status.as_deref() {
        Some("completed") => Some(Cow::Borrowed("stop")),
        Some("incomplete") => {
            let reason = r
                .incomplete_details
                .as_ref()
                .and_then(|d| d.reason.as_deref());
            Some(match reason {
                Some("max_output_tokens") | None => Cow::Borrowed("length"),
                Some(other) => Cow::Owned(other.to_string()),
            })
        }
        _ => None,
    }
}

pub(crate) fn parse_chunk(data: &[u8]) -> Result<ChunkInfo<'_>, serde_json::Error> {
    let ev: Event<'_> = serde_json::from_slice(data)?;
    let mut info = ChunkInfo {
        error: is_error(&ev.error, &ev.object),
        ..ChunkInfo::default()
    };
    match ev.kind.as_deref().unwrap_or("") {
        "response.output_text.delta" => {
            info.has_choice = true;
            info.content = non_empty(ev.delta);
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            info.has_choice = true;
            info.reasoning = non_empty(ev.delta);
        }
        "response.completed" | "response.incomplete" => {
            info.terminal = true;
            if let Some(r) = &ev.response {
                info.usage = r.usage.as_ref().map(UsageWire::to_usage);
                info.finish_reason = finish_of(r);
            }
        }
        "response.failed" | "error" => info.error = true,
        _ => {}
    }
    Ok(info)
}

pub(crate) fn parse_body(data: &[u8]) -> Result<BodyInfo, serde_json::Error> {
    let body: Value = serde_json::from_slice(data)?;
    let mut text = String::new();
    let items = body.get("output").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        let parts = item.get("content").and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
        }
    }
    let response: ResponseObject<'_> = serde_json::from_slice(data)?;
    let error = body.get("error").is_some_and(|e| !e.is_null())
        || body.get("status").and_then(Value::as_str) == Some("failed");
    Ok(BodyInfo {
        text,
        finish_reason: finish_of(&response).map(Cow::into_owned),
        usage: response.usage.as_ref().map(UsageWire::to_usage),
        error,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn delta_and_completed_events() {
        let d = parse_chunk(br#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"Hi"}"#).unwrap();
        assert!(d.has_choice);
        assert_eq!(d.content.as_deref(), Some("Hi"));
        let c = parse_chunk(br#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":2,"input_tokens_details":{"cached_tokens":4},"total_tokens":7}}}"#).unwrap();
        assert!(c.terminal);
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        let u = c.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cached_tokens),
            (Some(5), Some(2), Some(4))
        );
    }

    #[test]
    fn incomplete_is_length_and_failed_is_error() {
        let c = parse_chunk(br#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#).unwrap();
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
        assert!(
            parse_chunk(br#"{"type":"response.failed","response":{"status":"failed"}}"#)
                .unwrap()
                .error
        );
    }

    #[test]
    fn whole_body() {
        let b = parse_body(br#"{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Paris"}]}],"usage":{"input_tokens":3,"output_tokens":1}}"#).unwrap();
        assert_eq!(b.text, "Paris");
        assert_eq!(b.finish_reason.as_deref(), Some("stop"));
        assert!(!b.error);
    }
}
