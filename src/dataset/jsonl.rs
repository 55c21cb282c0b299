//! `kind = "jsonl"`: one request per line of a JSON Lines file. A line holds a prompt
//! (`prompt`, `question`, or `instruction` [+ `input`]), a `messages` array, a whole request
//! body (a `messages` or `prompt` line that also sets request fields such as `model` or
//! `max_tokens`), or, with `field`, the prompt under that key.

use serde_json::{Map, Value};

use super::source::{
    json_line, numbered_lines, read_text, resolve, Candidate, LineError, Source, SourceSet,
};
use super::{DatasetContext, DatasetError};

/// Keys that make a line a whole request body rather than a bare prompt.
const BODY_KEYS: &[&str] = &[
    "model",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stream",
    "stream_options",
    "stop",
    "n",
    "seed",
    "tools",
    "tool_choice",
    "response_format",
    "logprobs",
    "frequency_penalty",
    "presence_penalty",
    "ignore_eos",
    "min_tokens",
];

/// The prompts of the JSONL file at `path`, each from `field` when set.
pub(crate) fn read(
    path: &str,
    field: Option<&str>,
    ctx: &DatasetContext,
) -> Result<SourceSet, DatasetError> {
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let mut candidates = Vec::new();
    for (line, raw) in numbered_lines(&text) {
        let source = parse_line(raw, field).map_err(|e| e.at(&path, line))?;
        candidates.push(Candidate {
            source,
            answer: None,
            line,
        });
    }
    Ok(SourceSet {
        path,
        candidates,
        warn_on_cycle: true,
    })
}

/// The prompt of one line, from `field` when set.
pub(crate) fn parse_line(raw: &str, field: Option<&str>) -> Result<Source, LineError> {
    let value = json_line(raw)?;
    let Value::Object(object) = value else {
        return Err(format!("expected a JSON object, found {}", json_type(&value)).into());
    };
    Ok(match field {
        Some(field) => from_field(object, field),
        None => from_object(object),
    }?)
}

fn from_field(mut object: Map<String, Value>, field: &str) -> Result<Source, String> {
    match object.remove(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Source::Text(s)),
        Some(Value::String(_)) => Err(format!("field `{field}` is empty")),
        Some(Value::Array(items)) => messages(items).map(Source::Messages),
        Some(Value::Object(body)) => Ok(Source::Body(body)),
        Some(other) => Err(format!(
            "field `{field}` holds {}, expected a string, a messages array or a body object",
            json_type(&other)
        )),
        None => Err(format!(
            "no field `{field}` (set by the dataset's `field` key)"
        )),
    }
}

fn from_object(mut object: Map<String, Value>) -> Result<Source, String> {
    let is_body = BODY_KEYS.iter().any(|k| object.contains_key(*k));
    if let Some(value) = object.get("messages") {
        let Value::Array(items) = value else {
            return Err(format!(
                "`messages` is {}, expected an array",
                json_type(value)
            ));
        };
        let items = messages(items.clone())?;
        if is_body {
            return Ok(Source::Body(object));
        }
        return Ok(Source::Messages(items));
    }
    if let Some(Value::String(_)) = object.get("prompt") {
        if is_body {
            return Ok(Source::Body(object));
        }
    }
    for key in ["prompt", "question"] {
        if let Some(Value::String(s)) = object.remove(key) {
            return Ok(Source::Text(s));
        }
    }
    if let Some(Value::String(instruction)) = object.remove("instruction") {
        return Ok(match object.get("input").and_then(Value::as_str) {
            Some(input) if !input.trim().is_empty() => {
                Source::Text(format!("{instruction}\n\n{input}"))
            }
            _ => Source::Text(instruction),
        });
    }
    Err(
        "no prompt found: expected a `prompt`, `question` or `instruction` string or a \
         `messages` array (or name the key with the dataset's `field`)"
            .into(),
    )
}

/// Checks that every message is an object with a string `role`.
fn messages(items: Vec<Value>) -> Result<Vec<Value>, String> {
    if items.is_empty() {
        return Err("`messages` is empty".into());
    }
    for (i, m) in items.iter().enumerate() {
        if m.get("role").and_then(Value::as_str).is_none() {
            return Err(format!("message {} has no string `role`", i + 1));
        }
    }
    Ok(items)
}

pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn prompt_question_and_instruction_lines_are_text() {
        assert_eq!(
            from_object(obj(json!({"prompt": "a"}))).unwrap(),
            Source::Text("a".into())
        );
        assert_eq!(
            from_object(obj(json!({"question": "q", "answer": "x"}))).unwrap(),
            Source::Text("q".into())
        );
        assert_eq!(
            from_object(obj(json!({"instruction": "do", "input": "this"}))).unwrap(),
            Source::Text("do\n\nthis".into())
        );
    }

    #[test]
    fn messages_with_request_fields_are_a_body() {
        let m = json!([{"role": "user", "content": "hi"}]);
        assert!(matches!(
            from_object(obj(json!({"messages": m}))).unwrap(),
            Source::Messages(_)
        ));
        assert!(matches!(
            from_object(obj(json!({"messages": m, "model": "x", "max_tokens": 3}))).unwrap(),
            Source::Body(_)
        ));
        assert!(matches!(
            from_object(obj(json!({"prompt": "p", "max_tokens": 3}))).unwrap(),
            Source::Body(_)
        ));
    }

    #[test]
    fn field_picks_the_key_and_names_it_when_missing() {
        assert_eq!(
            from_field(obj(json!({"text": "t"})), "text").unwrap(),
            Source::Text("t".into())
        );
        let err = from_field(obj(json!({"x": 1})), "text").unwrap_err();
        assert!(err.contains("`text`"), "{err}");
    }

    #[test]
    fn a_line_without_a_prompt_says_what_is_expected() {
        let err = from_object(obj(json!({"foo": "bar"}))).unwrap_err();
        assert!(err.contains("`field`"), "{err}");
        let err = from_object(obj(json!({"messages": [{"content": "x"}]}))).unwrap_err();
        assert!(err.contains("role"), "{err}");
    }
}
