//! Tool calls: when a chat or Responses API request offers `tools`, a seeded share of its answers
//! (`tool_call_rate`) are tool calls instead of text: `tool_calls_per_answer` parallel
//! calls of tools drawn from those offered, arguments made valid for the tool's schema
//! (required keys, then each optional one by a coin; strings, numbers, integers,
//! booleans, arrays, `enum` picks) and streamed as vLLM does: the first delta of a call
//! carries its `index`, `id`, `type` and `function.name` with the first piece of the
//! arguments, later deltas only the `index` and the next piece (Responses: a
//! `function_call` item per call and its `function_call_arguments` events). A share of calls
//! (`fault_tool_arguments`) is malformed: the arguments cut short (not JSON), a required
//! key left out, or a tool name nobody offered, so a client's parse ratio has an exact
//! truth (the truth record's `tool_calls` and `tool_calls_malformed`).
//!
//! A request's tool results must answer the calls before them (`tool` messages after an
//! assistant message's `tool_calls`, or `function_call_output` items after
//! `function_call` items): every call id once, no other id (else HTTP 400, as OpenAI
//! answers).

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::request::ApiError;
use super::SimConfig;

/// One offered tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SimTool {
    pub name: String,
    pub parameters: Value,
}

/// One call an answer makes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub malformed: bool,
}

/// The tools a chat body offers (`tools[].function`, or the flat Responses shape).
pub(crate) fn offered(body: &Value) -> Vec<SimTool> {
    let list = body.get("tools").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|t| {
            let f = t.get("function").unwrap_or(t);
            Some(SimTool {
                name: f.get("name")?.as_str()?.to_string(),
                parameters: f.get("parameters").cloned().unwrap_or(json!({})),
            })
        })
        .collect()
}

/// The tools a request of `api` offers (none on completions).
pub(crate) fn offered_by(api: super::request::Api, body: &Value) -> Vec<SimTool> {
    match api {
        super::request::Api::Chat | super::request::Api::Responses => offered(body),
        super::request::Api::Completions => Vec::new(),
    }
}

/// Checks that every run of tool results answers the calls before it: each id once,
/// none unknown, none missing. Chat: `tool` messages (`tool_call_id`) after an assistant
/// message's `tool_calls`; Responses: `function_call_output` items (`call_id`) after
/// `function_call` items.
pub(crate) fn check_tool_messages(messages: &[Value]) -> Result<(), ApiError> {
    let mut open: BTreeSet<String> = BTreeSet::new();
    for (i, m) in messages.iter().enumerate() {
        let field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
        let answered = match (field("role"), field("type")) {
            ("tool", _) => Some(field("tool_call_id")),
            (_, "function_call_output") => Some(field("call_id")),
            _ => None,
        };
        if let Some(id) = answered {
            if !open.remove(id) {
                return Err(bad(format!(
                    "messages[{i}]: a tool result answers `{id}`, which no open tool call before it has"
                )));
            }
            continue;
        }
        if field("type") == "function_call" {
            open.insert(field("call_id").to_string());
            continue;
        }
        if let Some(first) = open.iter().next() {
            return Err(bad(format!(
                "messages[{i}]: the tool call `{first}` was not answered by a tool result"
            )));
        }
        let calls = m.get("tool_calls").and_then(Value::as_array);
        open.extend(
            calls
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_string)),
        );
    }
    Ok(())
}

fn bad(message: String) -> ApiError {
    ApiError::bad_request(message, Some("messages"))
}

/// The calls of the answer to request `seq` (`None`: a text answer).
pub(crate) fn plan_calls(cfg: &SimConfig, tools: &[SimTool], seq: u64) -> Option<Vec<PlannedCall>> {
    if tools.is_empty() || cfg.tool_call_rate <= 0.0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x746f_6f6c ^ seq.wrapping_mul(0x9e37_79b9));
    if rng.gen::<f64>() >= cfg.tool_call_rate {
        return None;
    }
    let n = cfg.tool_calls_per_answer.max(1);
    let calls = (0..n)
        .map(|i| {
            let tool = &tools[rng.gen_range(0..tools.len())];
            let args = example(&tool.parameters, &mut rng, 0);
            let mut call = PlannedCall {
                id: format!("call_{seq:x}_{i}"),
                name: tool.name.clone(),
                arguments: args.to_string(),
                malformed: false,
            };
            if rng.gen::<f64>() < cfg.fault_tool_arguments {
                break_call(&mut call, &tool.parameters, args, rng.gen_range(0..3));
            }
            call
        })
        .collect();
    Some(calls)
}

/// Arguments valid for `schema` (seeded by `seq`), as a JSON text: a golden tool call
/// answered correctly.
pub(crate) fn valid_arguments(schema: &Value, seq: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(0x676f_6c64 ^ seq.wrapping_mul(0x9e37_79b9));
    example(schema, &mut rng, 0).to_string()
}

/// Makes `call` fail to parse in way `how`: 0 arguments cut short (not JSON), 1 a
/// required key left out (cut when the schema requires none), 2 an unknown tool name.
fn break_call(call: &mut PlannedCall, schema: &Value, mut args: Value, how: u32) {
    call.malformed = true;
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect();
    match how {
        2 => call.name.push_str("_unknown"),
        1 if !required.is_empty() => {
            if let Some(obj) = args.as_object_mut() {
                obj.remove(&required[0]);
            }
            call.arguments = args.to_string();
        }
        _ => {
            let keep = call.arguments.len().saturating_sub(1).max(1);
            call.arguments = format!("{{{}", &call.arguments[1..keep.max(1)]);
        }
    }
}

const WORDS: [&str; 8] = [
    "Paris",
    "Oslo",
    "rust",
    "benchmark",
    "Lima",
    "tokens",
    "cache",
    "Kyoto",
];

/// A value valid for `schema` (the subset perfplan checks).
fn example(schema: &Value, rng: &mut ChaCha8Rng, depth: u32) -> Value {
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.is_empty() {
            return options[rng.gen_range(0..options.len())].clone();
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(list)) => list.first().and_then(Value::as_str).unwrap_or("string"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" if depth < 4 => {
            let required: BTreeSet<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut out = Map::new();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (k, sub) in props {
                    if required.contains(k.as_str()) || rng.gen_bool(0.5) {
                        out.insert(k.clone(), example(sub, rng, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "object" => json!({}),
        "array" => match schema.get("items") {
            Some(items) if depth < 4 => json!([example(items, rng, depth + 1)]),
            _ => json!([]),
        },
        "integer" => json!(rng.gen_range(0..100)),
        "number" => json!(f64::from(rng.gen_range(0..1000)) / 10.0),
        "boolean" => json!(rng.gen_bool(0.5)),
        "null" => Value::Null,
        _ => json!(WORDS[rng.gen_range(0..WORDS.len())]),
    }
}

/// One call's piece of the chunk carrying output tokens `span` of an answer of `len`
/// tokens: the calls share the tokens in order (call c takes tokens
/// `c × len / n .. (c + 1) × len / n`), and each call's arguments are cut into as many
/// pieces as it has tokens.
struct Piece<'a> {
    index: u32,
    call: &'a PlannedCall,
    text: &'a str,
    /// The call's first piece (its name goes with it).
    first: bool,
    /// The call's last piece.
    last: bool,
}

/// The pieces of every call that the chunk carrying tokens `from..to` holds.
fn pieces(calls: &[PlannedCall], (from, to): (u32, u32), len: u32) -> Vec<Piece<'_>> {
    let n = (calls.len() as u32).min(len.max(1)).max(1);
    (0..n)
        .filter_map(|c| {
            let (start, end) = (c * len / n, (c + 1) * len / n);
            let (lo, hi) = (from.max(start), to.min(end));
            let call = calls.get(c as usize).filter(|_| lo < hi)?;
            let at = |k: u32| cut(&call.arguments, k, end - start);
            Some(Piece {
                index: c,
                call,
                text: &call.arguments[at(lo - start)..at(hi - start)],
                first: lo == start,
                last: hi == end,
            })
        })
        .collect()
}

/// The `tool_calls` entries of the chunk carrying output tokens `span` of an answer of
/// `len` tokens (see [`Piece`]).
pub(crate) fn deltas(calls: &[PlannedCall], span: (u32, u32), len: u32) -> Value {
    let out = pieces(calls, span, len).into_iter().map(|p| {
        let mut entry = json!({"index": p.index, "function": {"arguments": p.text}});
        if p.first {
            entry["id"] = json!(p.call.id);
            entry["type"] = json!("function");
            entry["function"]["name"] = json!(p.call.name);
        }
        entry
    });
    Value::Array(out.collect())
}

/// The byte offset where piece `k` of `pieces` of `text` starts (on a char boundary).
fn cut(text: &str, k: u32, pieces: u32) -> usize {
    let mut at = (text.len() as u64 * u64::from(k) / u64::from(pieces.max(1))) as usize;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The Responses API events of the chunk carrying output tokens `span` of an answer of
/// `len` tokens (the calls share the tokens as in [`Piece`]): a call's
/// `response.output_item.added` with its first piece, `function_call_arguments.delta`
/// for each piece, and its `.done` events with its last. Output index c is call c.
pub(crate) fn response_events(
    calls: &[PlannedCall],
    span: (u32, u32),
    len: u32,
    id: &str,
) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    for Piece {
        index: c,
        call,
        text,
        first,
        last,
    } in pieces(calls, span, len)
    {
        let item_id = format!("fc_{id}_{c}");
        if first {
            let item = response_item(call, &item_id, "", "in_progress");
            out.push((
                "response.output_item.added",
                json!({"output_index": c, "item": item}),
            ));
        }
        out.push((
            "response.function_call_arguments.delta",
            json!({"item_id": item_id, "output_index": c, "delta": text}),
        ));
        if last {
            out.push((
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": c, "arguments": call.arguments}),
            ));
            let item = response_item(call, &item_id, &call.arguments, "completed");
            out.push((
                "response.output_item.done",
                json!({"output_index": c, "item": item}),
            ));
        }
    }
    out
}

/// A Responses API `function_call` output item.
pub(crate) fn response_item(
    call: &PlannedCall,
    item_id: &str,
    arguments: &str,
    status: &str,
) -> Value {
    json!({"type": "function_call", "id": item_id, "call_id": call.id, "name": call.name,
        "arguments": arguments, "status": status})
}

/// Every call as a completed Responses API output item.
pub(crate) fn response_items(calls: &[PlannedCall], id: &str) -> Vec<Value> {
    let each = calls.iter().enumerate();
    each.map(|(c, call)| response_item(call, &format!("fc_{id}_{c}"), &call.arguments, "completed"))
        .collect()
}

/// The whole calls, as a non-streamed message carries them.
pub(crate) fn message_calls(calls: &[PlannedCall]) -> Value {
    calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function",
            "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> SimTool {
        SimTool {
            name: "get_weather".into(),
            parameters: json!({"type": "object", "properties": {
                "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                "required": ["city"]}),
        }
    }

    #[test]
    fn the_pieces_of_every_chunk_make_the_arguments() {
        let cfg = SimConfig {
            tool_call_rate: 1.0,
            tool_calls_per_answer: 2,
            ..SimConfig::default()
        };
        let calls = plan_calls(&cfg, &[weather()], 3).unwrap();
        assert_eq!(calls.len(), 2);
        let mut joined = [String::new(), String::new()];
        for k in 0..10 {
            for e in deltas(&calls, (k, k + 1), 10).as_array().unwrap() {
                let i = e["index"].as_u64().unwrap() as usize;
                joined[i].push_str(e["function"]["arguments"].as_str().unwrap());
                assert_eq!(e.get("id").is_some(), k == 0 || k == 5, "{e}");
            }
        }
        for (i, c) in calls.iter().enumerate() {
            assert_eq!(joined[i], c.arguments);
            let v: Value = serde_json::from_str(&c.arguments).unwrap();
            assert!(v["city"].is_string());
        }
    }

    #[test]
    fn broken_calls_are_marked_and_fail() {
        let cfg = SimConfig {
            tool_call_rate: 1.0,
            fault_tool_arguments: 1.0,
            ..SimConfig::default()
        };
        for seq in 0..30 {
            let call = &plan_calls(&cfg, &[weather()], seq).unwrap()[0];
            assert!(call.malformed);
            let args: Option<Value> = serde_json::from_str(&call.arguments).ok();
            let fine = call.name == "get_weather"
                && args.is_some_and(|a| a.get("city").is_some_and(Value::is_string));
            assert!(!fine, "{call:?}");
        }
    }

    #[test]
    fn tool_messages_must_answer_the_open_calls() {
        let call = json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
        let ok = [
            json!({"role": "user", "content": "hi"}),
            call.clone(),
            json!({"role": "tool", "tool_call_id": "a", "content": "r"}),
            json!({"role": "user", "content": "more"}),
        ];
        assert!(check_tool_messages(&ok).is_ok());
        let wrong = [
            call.clone(),
            json!({"role": "tool", "tool_call_id": "b", "content": "r"}),
        ];
        assert!(check_tool_messages(&wrong)
            .unwrap_err()
            .message
            .contains("`b`"));
        let missing = [call, json!({"role": "user", "content": "x"})];
        assert!(check_tool_messages(&missing)
            .unwrap_err()
            .message
            .contains("`a` was not answered"));
    }
}
