//! Tools a tool-calling run offers, as the request bodies send them (`tools`: Chat
//! Completions' `{"type": "function", "function": {...}}`, the Responses API's flat
//! `{"type": "function", "name", ...}`), how an answer's streamed tool-call pieces are
//! assembled into calls (`assemble`), and whether each call parsed (`ToolSet::check`): a
//! known tool name, arguments that are JSON, and arguments valid for the tool's schema.
//!
//! The schema check is a small, honest subset of JSON Schema: `type` (one name or a
//! list), `required`, `properties` (recursively), `items` (arrays, recursively) and
//! `enum`. Every other keyword (`additionalProperties`, `pattern`, `minimum`/`maximum`,
//! lengths, `format`, `const`, `$ref`, `anyOf`/`oneOf`/`allOf`/`not`, …) is not checked:
//! arguments that break only those count as parsed.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{ApiKind, ToolDelta};
use crate::record::{ToolCall, ToolTally, MAX_TOOL_CALLS};

/// One tool: its name, description, JSON Schema of its arguments and, when the dataset
/// gives one, the text its mocked result answers with.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub result: Option<String>,
}

/// The tools offered by every request of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSet {
    pub tools: Vec<ToolDef>,
}

/// What a request of a tool-calling run carries to the engine: its round in the turn and
/// the tools its answer's calls are checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolTurn {
    pub round: u16,
    pub set: Arc<ToolSet>,
}

/// Why a tool call did not parse (or that it did).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCheck {
    Parsed,
    UnknownTool,
    NotJson,
    /// Valid JSON that breaks the tool's schema: where and how.
    NotValid(String),
}

fn def(name: &str, description: &str, parameters: Value) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: description.into(),
        parameters,
        result: None,
    }
}

impl ToolSet {
    /// The built-in tools: `get_weather(city, unit?)`, `add(a, b)`, `search(query)`.
    pub fn builtin() -> ToolSet {
        ToolSet {
            tools: vec![
                def(
                    "get_weather",
                    "Get the current weather in a city",
                    json!({"type": "object", "properties": {
                        "city": {"type": "string", "description": "the city, e.g. Paris"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                        "required": ["city"]}),
                ),
                def(
                    "add",
                    "Add two numbers",
                    json!({"type": "object", "properties": {
                        "a": {"type": "number"}, "b": {"type": "number"}},
                        "required": ["a", "b"]}),
                ),
                def(
                    "search",
                    "Search the web",
                    json!({"type": "object", "properties": {
                        "query": {"type": "string"}}, "required": ["query"]}),
                ),
            ],
        }
    }

    /// Tools from a JSON array: each `{"type": "function", "function": {"name",
    /// "description", "parameters"}}` (as sent to Chat Completions) or the flat `{"name",
    /// "description", "parameters"}`, with an optional `"result"` string (the mocked
    /// result's text). Errors name the entry (`tool 2: ...`).
    pub fn from_json(value: &Value) -> Result<ToolSet, String> {
        let list = value.as_array().ok_or("expected a JSON array of tools")?;
        let mut tools = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let tool = one_tool(entry).map_err(|e| format!("tool {}: {e}", i + 1))?;
            if tools.iter().any(|t: &ToolDef| t.name == tool.name) {
                return Err(format!(
                    "tool {}: the name `{}` is given twice",
                    i + 1,
                    tool.name
                ));
            }
            tools.push(tool);
        }
        if tools.is_empty() {
            return Err("the list of tools is empty".into());
        }
        Ok(ToolSet { tools })
    }

    /// The request body's `tools` for `api`.
    pub(crate) fn body_field(&self, api: ApiKind) -> Value {
        let each = self.tools.iter().map(|t| match api {
            ApiKind::Responses => json!({"type": "function", "name": t.name,
                "description": t.description, "parameters": t.parameters}),
            _ => json!({"type": "function", "function": {"name": t.name,
                "description": t.description, "parameters": t.parameters}}),
        });
        Value::Array(each.collect())
    }

    pub fn find(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Whether `call` parsed.
    pub fn check(&self, call: &ToolCall) -> ToolCheck {
        let Some(tool) = self.find(&call.name) else {
            return ToolCheck::UnknownTool;
        };
        let Ok(args) = serde_json::from_str::<Value>(&call.arguments) else {
            return ToolCheck::NotJson;
        };
        match validate(&tool.parameters, &args, "arguments") {
            Ok(()) => ToolCheck::Parsed,
            Err(why) => ToolCheck::NotValid(why),
        }
    }

    /// The tally of an answer's calls in round `round` (the calls the record kept: at
    /// most `MAX_TOOL_CALLS`).
    pub(crate) fn tally(&self, round: u16, calls: &[ToolCall]) -> ToolTally {
        let parsed = calls
            .iter()
            .filter(|c| self.check(c) == ToolCheck::Parsed)
            .count() as u32;
        ToolTally {
            round,
            calls: calls.len() as u32,
            parsed,
        }
    }
}

fn one_tool(entry: &Value) -> Result<ToolDef, String> {
    let f = entry.get("function").unwrap_or(entry);
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("needs a non-empty string `name`")?;
    let parameters = f
        .get("parameters")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    if !parameters.is_object() {
        return Err(format!(
            "`{name}`: `parameters` must be a JSON Schema object"
        ));
    }
    check_schema(&parameters, &format!("`{name}`.parameters"))?;
    let result = match entry.get("result") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(format!("`{name}`: `result` must be a string")),
    };
    Ok(ToolDef {
        name: name.to_string(),
        description: f
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        parameters,
        result,
    })
}

const TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Refuses a schema whose checked keywords are malformed (an unknown `type`, a `required`
/// that is not a list of names, …), so that a typo does not silently pass every call.
fn check_schema(schema: &Value, at: &str) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return Err(format!("{at}: a schema must be an object"));
    };
    if let Some(t) = obj.get("type") {
        let names: Vec<&Value> = match t {
            Value::Array(list) => list.iter().collect(),
            one => vec![one],
        };
        for n in names {
            match n.as_str() {
                Some(s) if TYPES.contains(&s) => {}
                _ => {
                    let hint = n.as_str().and_then(|s| crate::suggest::nearest(s, TYPES));
                    let hint = hint.map_or(String::new(), |h| format!(" (did you mean `{h}`?)"));
                    return Err(format!("{at}.type: unknown type {n}{hint}"));
                }
            }
        }
    }
    if let Some(r) = obj.get("required") {
        if !r.as_array().is_some_and(|l| l.iter().all(Value::is_string)) {
            return Err(format!("{at}.required: expected a list of property names"));
        }
    }
    if let Some(e) = obj.get("enum") {
        if !e.is_array() {
            return Err(format!("{at}.enum: expected a list of values"));
        }
    }
    if let Some(p) = obj.get("properties") {
        let Some(p) = p.as_object() else {
            return Err(format!("{at}.properties: expected an object"));
        };
        for (k, v) in p {
            check_schema(v, &format!("{at}.properties.{k}"))?;
        }
    }
    if let Some(items) = obj.get("items") {
        check_schema(items, &format!("{at}.items"))?;
    }
    Ok(())
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// Checks `v` against the subset of JSON Schema in the module's doc; the error names the
/// path (`arguments.city`) and what was wrong.
pub fn validate(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Ok(());
    };
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(name) => type_matches(name, v),
            Value::Array(names) => names
                .iter()
                .any(|n| n.as_str().is_some_and(|n| type_matches(n, v))),
            _ => true,
        };
        if !ok {
            return Err(format!("{at}: expected type {t}, got {}", kind_of(v)));
        }
    }
    if let Some(Value::Array(allowed)) = s.get("enum") {
        if !allowed.contains(v) {
            return Err(format!(
                "{at}: {v} is not one of {}",
                Value::Array(allowed.clone())
            ));
        }
    }
    if let Some(obj) = v.as_object() {
        if let Some(Value::Array(required)) = s.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(key) {
                    return Err(format!("{at}: the required key `{key}` is missing"));
                }
            }
        }
        if let Some(Value::Object(props)) = s.get("properties") {
            for (k, sub) in props {
                if let Some(val) = obj.get(k) {
                    validate(sub, val, &format!("{at}.{k}"))?;
                }
            }
        }
    }
    if let (Some(items), Some(list)) = (s.get("items"), v.as_array()) {
        for (i, val) in list.iter().enumerate() {
            validate(items, val, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Adds one streamed piece to the answer's calls: a new `index` opens a call (at most
/// [`MAX_TOOL_CALLS`]; returns false for a piece of a call beyond them), a later piece
/// of the same index sets its id and name if not yet known and appends its arguments
/// (kept up to `max_text` bytes).
pub(crate) fn assemble(calls: &mut Vec<ToolCall>, d: &ToolDelta<'_>, max_text: usize) -> bool {
    let at = match calls.iter().position(|c| c.index == d.index) {
        Some(at) => at,
        None if calls.len() >= MAX_TOOL_CALLS => return false,
        None => {
            calls.push(ToolCall {
                index: d.index,
                ..ToolCall::default()
            });
            calls.len() - 1
        }
    };
    let call = &mut calls[at];
    let text = |t: &Option<Cow<'_, str>>| t.as_deref().unwrap_or("").to_string();
    if call.id.is_empty() {
        call.id = text(&d.id);
    }
    // vLLM sends the name once; a server that repeats it whole in every piece is read
    // the same, and one that sends it in pieces has them appended.
    match d.name.as_deref() {
        Some(name) if call.name.is_empty() => call.name = name.to_string(),
        Some(name) if call.name != name => call.name.push_str(name),
        _ => {}
    }
    if let Some(piece) = d.arguments.as_deref() {
        let room = max_text.saturating_sub(call.arguments.len());
        let mut end = piece.len().min(room);
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        call.arguments.push_str(&piece[..end]);
    }
    true
}

#[cfg(test)]
mod tests;
