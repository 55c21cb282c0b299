//! `/v1/responses` (OpenAI Responses API): the request body (`input`) and the parsers of
//! its typed stream events and whole bodies. A stream ends with `response.completed`
//! (or `response.incomplete`), not `[DONE]`.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::{is_error, non_empty, UsageWire};
use super::{base_body, prompt_name, ApiError, BodyInfo, BodyInput, ChunkInfo, Prompt, ToolDelta};

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
    /// The output item an event is about (a function call's place among the calls).
    #[serde(default)]
    output_index: Option<u32>,
    /// `response.output_item.added`: the item (a function call's `call_id` and `name`).
    #[serde(borrow, default)]
    item: Option<ItemWire<'a>>,
}

#[derive(Deserialize)]
struct ItemWire<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
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
        "response.output_text.delta" | "response.refusal.delta" => {
            (info.has_choice, info.token) = (true, true);
            info.content = non_empty(ev.delta);
        }
        "response.function_call_arguments.delta" => {
            (info.has_choice, info.token) = (true, true);
            info.tool = non_empty(ev.delta);
            info.tool_deltas.push(ToolDelta {
                index: ev.output_index.unwrap_or(0),
                arguments: info.tool.clone(),
                ..ToolDelta::default()
            });
        }
        // A function call opens: its call id and name (its arguments follow in deltas).
        "response.output_item.added" => {
            let call = ev
                .item
                .filter(|i| i.kind.as_deref() == Some("function_call"));
            if let Some(item) = call {
                info.tool_deltas.push(ToolDelta {
                    index: ev.output_index.unwrap_or(0),
                    id: non_empty(item.call_id),
                    name: non_empty(item.name),
                    arguments: None,
                });
            }
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            (info.has_choice, info.token) = (true, true);
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
    let (mut text, mut reasoning) = (String::new(), String::new());
    let mut tool_calls = Vec::new();
    let items = body.get("output").and_then(Value::as_array);
    for (n, item) in items.into_iter().flatten().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => reasoning.push_str(&item_text(item)),
            Some("function_call") => {
                let s = |k: &str| {
                    item.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                tool_calls.push(crate::record::ToolCall {
                    index: n as u32,
                    id: s("call_id"),
                    name: s("name"),
                    arguments: s("arguments"),
                });
                text.push_str(&item_text(item));
            }
            _ => text.push_str(&item_text(item)),
        }
    }
    let response: ResponseObject<'_> = serde_json::from_slice(data)?;
    let error = body.get("error").is_some_and(|e| !e.is_null())
        || body.get("status").and_then(Value::as_str) == Some("failed");
    Ok(BodyInfo {
        tool_calls,
        text,
        reasoning,
        finish_reason: finish_of(&response).map(Cow::into_owned),
        usage: response.usage.as_ref().map(UsageWire::to_usage),
        error,
    })
}

/// The generated text of one output item: a message's text and refusal parts, a
/// reasoning item's text and summary parts, a function call's name and arguments.
fn item_text(item: &Value) -> String {
    let mut text = String::new();
    let str_of = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    if item.get("type").and_then(Value::as_str) == Some("function_call") {
        text.push_str(&str_of(item.get("name")));
        text.push_str(&str_of(item.get("arguments")));
        return text;
    }
    for key in ["summary", "content"] {
        let parts = item.get(key).and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            text.push_str(&str_of(part.get("text").or(part.get("refusal"))));
        }
    }
    text
}

#[cfg(test)]
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
    fn function_call_and_refusal_deltas_are_answers() {
        let f = parse_chunk(br#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"city\":"}"#).unwrap();
        assert_eq!(f.tool.as_deref(), Some("{\"city\":"));
        assert!(f.has_answer() && f.has_choice);
        let r = parse_chunk(br#"{"type":"response.refusal.delta","delta":"no"}"#).unwrap();
        assert_eq!(r.content.as_deref(), Some("no"));
        let t = parse_chunk(br#"{"type":"response.reasoning_text.delta","delta":"hm"}"#).unwrap();
        assert!(t.has_output() && !t.has_answer());
        let done =
            parse_chunk(br#"{"type":"response.function_call_arguments.done","arguments":"{}"}"#)
                .unwrap();
        assert!(!done.has_output());
    }

    #[test]
    fn whole_body_with_reasoning_and_a_function_call() {
        let b = parse_body(br#"{"status":"completed","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"think "}],"content":[{"type":"reasoning_text","text":"hard "}]},{"type":"function_call","call_id":"c","name":"get","arguments":"{}"}],"usage":{"input_tokens":3,"output_tokens":5}}"#).unwrap();
        assert_eq!(
            (b.reasoning.as_str(), b.text.as_str()),
            ("think hard ", "get{}")
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
