//! Golden requests of a plan's `[checks]`: a prompt with its expected answer, the small
//! built-in set any instruct model should pass, one JSONL line of a user's set
//! (`GoldenCase::from_json`), and the check of an answer against what was expected
//! (`Expected::judge`): exact match after trimming, a regex, JSON valid for a schema (the
//! subset of JSON Schema `tools::validate` checks), or a tool call that parses
//! (`tools::ToolSet::check`, the `tool_calls` dataset kind's check). Pure: no HTTP, no
//! files, no plans.

use std::sync::Arc;

use serde_json::{json, Value};

use super::tools::{ToolCheck, ToolSet};
use super::Prompt;
use crate::record::{AnswerCheck, Outcome, RequestRecord};

#[cfg(test)]
mod tests;

/// What a golden answer must be.
#[derive(Debug, Clone)]
pub enum Expected {
    /// The answer, trimmed, equals this text (trimmed).
    Exact(String),
    /// The answer matches this regex anywhere.
    Regex(regex::Regex),
    /// The answer (trimmed, a Markdown code fence around it taken off) is JSON valid for
    /// this schema.
    JsonSchema(Value),
    /// The answer carries a call of this tool whose arguments parse for its schema.
    ToolCall(String),
}

impl PartialEq for Expected {
    fn eq(&self, other: &Expected) -> bool {
        match (self, other) {
            (Expected::Exact(a), Expected::Exact(b)) => a == b,
            (Expected::Regex(a), Expected::Regex(b)) => a.as_str() == b.as_str(),
            (Expected::JsonSchema(a), Expected::JsonSchema(b)) => a == b,
            (Expected::ToolCall(a), Expected::ToolCall(b)) => a == b,
            _ => false,
        }
    }
}

/// One golden request: what is asked, what must come back, and the tools it offers.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldenCase {
    /// Text (the user's message of a chat, or a completions prompt) or chat messages.
    pub prompt: Prompt,
    pub expected: Expected,
    /// The tools offered with the request (a `tool_call` check), `None` otherwise.
    pub tools: Option<Arc<ToolSet>>,
}

fn case(prompt: &str, expected: Expected) -> GoldenCase {
    GoldenCase {
        prompt: Prompt::Text(prompt.to_string()),
        expected,
        tools: None,
    }
}

fn regex(pattern: &str) -> Expected {
    // The built-in patterns are constants checked by the module's tests.
    Expected::Regex(regex::Regex::new(pattern).unwrap_or_else(|_| never()))
}

fn never() -> regex::Regex {
    regex::Regex::new("$^").unwrap_or_else(|_| unreachable!("a constant pattern"))
}

/// The built-in golden set: arithmetic, a JSON extraction with a schema, and (when the
/// API offers tools: `tools`) one tool call.
pub fn builtin(tools: bool) -> Vec<GoldenCase> {
    let mut set = vec![
        case(
            "What is 17 + 25? Answer with the number only.",
            regex(r"\b42\b"),
        ),
        case(
            "What is 123 + 456? Answer with the number only.",
            regex(r"\b579\b"),
        ),
        case(
            "What is 9 + 8? Answer with the number only.",
            regex(r"\b17\b"),
        ),
        case(
            "Extract the person from this sentence as a JSON object with the keys \"name\" \
             (a string) and \"age\" (an integer): \"Ada Lovelace is 36 years old.\" Answer \
             with the JSON object only.",
            Expected::JsonSchema(json!({"type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name", "age"]})),
        ),
    ];
    if tools {
        set.push(GoldenCase {
            prompt: Prompt::Text(
                "What is the weather in Paris right now? Use the get_weather tool.".into(),
            ),
            expected: Expected::ToolCall("get_weather".into()),
            tools: Some(Arc::new(ToolSet::builtin())),
        });
    }
    set
}

impl GoldenCase {
    /// One line of a user's golden file: `{"prompt": "..."}` or `{"messages": [...]}`,
    /// `"expected": {"exact" | "regex" | "json_schema" | "tool_call": ...}`, and for a
    /// `tool_call` check optional `"tools"` (else the built-in tools). The error says
    /// what is wrong with the line.
    pub fn from_json(line: &Value) -> Result<GoldenCase, String> {
        let obj = line.as_object().ok_or("expected a JSON object")?;
        for key in obj.keys() {
            if !["prompt", "messages", "expected", "tools"].contains(&key.as_str()) {
                let hint =
                    crate::suggest::nearest(key, ["prompt", "messages", "expected", "tools"])
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                return Err(format!("unknown key `{key}`{hint}"));
            }
        }
        let prompt = match (obj.get("prompt"), obj.get("messages")) {
            (Some(Value::String(p)), None) if !p.trim().is_empty() => Prompt::Text(p.clone()),
            (None, Some(Value::Array(m))) if !m.is_empty() => Prompt::Messages(m.clone()),
            (Some(_), Some(_)) => return Err("give `prompt` or `messages`, not both".into()),
            (Some(_), None) => return Err("`prompt` must be a non-empty string".into()),
            (None, Some(_)) => return Err("`messages` must be a non-empty array".into()),
            (None, None) => return Err("missing `prompt` (or `messages`)".into()),
        };
        let expected = expected(obj.get("expected").ok_or("missing `expected`")?)?;
        let tools = match (&expected, obj.get("tools")) {
            (Expected::ToolCall(_), None) => Some(Arc::new(ToolSet::builtin())),
            (Expected::ToolCall(_), Some(t)) => Some(Arc::new(
                ToolSet::from_json(t).map_err(|e| format!("`tools`: {e}"))?,
            )),
            (_, Some(_)) => return Err("`tools` is only for a `tool_call` check".into()),
            (_, None) => None,
        };
        if let (Expected::ToolCall(name), Some(set)) = (&expected, &tools) {
            if set.find(name).is_none() {
                return Err(format!("`expected.tool_call`: no tool `{name}` is offered"));
            }
        }
        Ok(GoldenCase {
            prompt,
            expected,
            tools,
        })
    }
}

const KINDS: [&str; 4] = ["exact", "regex", "json_schema", "tool_call"];

fn expected(v: &Value) -> Result<Expected, String> {
    let obj = v.as_object().filter(|o| o.len() == 1).ok_or(
        "`expected` must be an object with one of `exact`, `regex`, `json_schema`, `tool_call`",
    )?;
    let (kind, value) = obj.iter().next().ok_or("`expected` is empty")?;
    let text = || {
        value
            .as_str()
            .map(str::to_string)
            .ok_or(format!("`expected.{kind}` must be a string"))
    };
    match kind.as_str() {
        "exact" => Ok(Expected::Exact(text()?.trim().to_string())),
        "regex" => regex::Regex::new(&text()?)
            .map(Expected::Regex)
            .map_err(|e| format!("`expected.regex`: {e}")),
        "json_schema" if value.is_object() => Ok(Expected::JsonSchema(value.clone())),
        "json_schema" => Err("`expected.json_schema` must be a JSON Schema object".into()),
        "tool_call" => Ok(Expected::ToolCall(text()?)),
        other => {
            let hint = crate::suggest::nearest(other, KINDS)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            Err(format!(
                "unknown check `expected.{other}`{hint}: one of `exact`, `regex`, `json_schema`, `tool_call`"
            ))
        }
    }
}

/// The answer's text without a Markdown code fence around it (```json … ```).
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.strip_suffix("```").unwrap_or(inner);
    match inner.find('\n') {
        Some(at) => inner[at + 1..].trim(),
        None => inner.trim(),
    }
}

impl Expected {
    /// The check of a golden request's record: `Failed` when the request failed,
    /// else its answer (`output_text`, `tool_calls`) against the expectation.
    pub fn judge(&self, rec: &RequestRecord, tools: Option<&ToolSet>) -> AnswerCheck {
        if rec.outcome != Outcome::Ok {
            return AnswerCheck::Failed;
        }
        let text = rec.output_text.trim();
        match self {
            Expected::ToolCall(name) => {
                let Some(set) = tools else {
                    return AnswerCheck::Unparsed;
                };
                if rec.tool_calls.is_empty() {
                    return AnswerCheck::Unparsed;
                }
                let right = rec
                    .tool_calls
                    .iter()
                    .any(|c| c.name == *name && set.check(c) == ToolCheck::Parsed);
                let json = rec
                    .tool_calls
                    .iter()
                    .any(|c| serde_json::from_str::<Value>(&c.arguments).is_ok());
                match (right, json) {
                    (true, _) => AnswerCheck::Ok,
                    (false, true) => AnswerCheck::Wrong,
                    (false, false) => AnswerCheck::Unparsed,
                }
            }
            _ if text.is_empty() => AnswerCheck::Unparsed,
            Expected::Exact(want) => ok_if(text == want),
            Expected::Regex(re) => ok_if(re.is_match(text)),
            Expected::JsonSchema(schema) => match serde_json::from_str::<Value>(unfenced(text)) {
                Ok(v) => ok_if(super::tools::validate(schema, &v, "answer").is_ok()),
                Err(_) => AnswerCheck::Unparsed,
            },
        }
    }
}

fn ok_if(right: bool) -> AnswerCheck {
    if right {
        AnswerCheck::Ok
    } else {
        AnswerCheck::Wrong
    }
}
