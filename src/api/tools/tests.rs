use super::*;
use crate::api::{parse_chunk, ApiKind};

fn calls_of(events: &[&str]) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    for e in events {
        let info = parse_chunk(ApiKind::Chat, None, e.as_bytes()).unwrap();
        for d in &info.tool_deltas {
            assemble(&mut calls, d, 1 << 20);
        }
    }
    calls
}

#[test]
fn vllm_fragments_assemble_by_index() {
    // As vLLM streams them: the name (with an empty arguments piece) in the first delta
    // of each call, the arguments in many pieces, two parallel calls by index.
    let calls = calls_of(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-a","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Par"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-b","type":"function","index":1,"function":{"name":"add"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"function":{"arguments":"is\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\": 1, \"b\": 2}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (
            calls[0].id.as_str(),
            calls[0].name.as_str(),
            calls[0].arguments.as_str()
        ),
        ("chatcmpl-tool-a", "get_weather", r#"{"city": "Paris"}"#)
    );
    assert_eq!(
        (
            calls[1].id.as_str(),
            calls[1].name.as_str(),
            calls[1].arguments.as_str()
        ),
        ("chatcmpl-tool-b", "add", r#"{"a": 1, "b": 2}"#)
    );
    let set = ToolSet::builtin();
    assert_eq!(
        set.tally(1, &calls),
        ToolTally {
            round: 1,
            calls: 2,
            parsed: 2
        }
    );
}

#[test]
fn a_name_repeated_in_every_piece_is_read_once() {
    // Some servers (and proxies) repeat the whole name, or the id, in every delta.
    let calls = calls_of(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"add","arguments":"{\"a\":"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"add","arguments":"1,\"b\":2}"}}]}}]}"#,
    ]);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].name.as_str(), calls[0].arguments.as_str()),
        ("add", r#"{"a":1,"b":2}"#)
    );
    assert_eq!(ToolSet::builtin().check(&calls[0]), ToolCheck::Parsed);
}

#[test]
fn a_whole_message_and_the_older_function_call_are_read() {
    let body = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{\"query\":\"rust\"}"}}]},"finish_reason":"tool_calls"}]}"#;
    let info = crate::api::parse_body(ApiKind::Chat, body).unwrap();
    assert_eq!(info.tool_calls.len(), 1);
    assert_eq!(info.tool_calls[0].id, "c1");
    assert_eq!(info.tool_calls[0].arguments, r#"{"query":"rust"}"#);
    let old = calls_of(&[
        r#"{"choices":[{"delta":{"function_call":{"name":"add","arguments":"{\"a\":1,"}}}]}"#,
        r#"{"choices":[{"delta":{"function_call":{"arguments":"\"b\":2}"}}}]}"#,
    ]);
    assert_eq!(old.len(), 1);
    assert_eq!(
        (old[0].name.as_str(), old[0].arguments.as_str()),
        ("add", r#"{"a":1,"b":2}"#)
    );
}

#[test]
fn responses_function_call_items_assemble() {
    let events = [
        r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_9","name":"add","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"a\":"}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"3,\"b\":4}"}"#,
        r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":1,"arguments":"{\"a\":3,\"b\":4}"}"#,
    ];
    let mut calls = Vec::new();
    for e in events {
        let info = parse_chunk(ApiKind::Responses, None, e.as_bytes()).unwrap();
        for d in &info.tool_deltas {
            assemble(&mut calls, d, 1 << 20);
        }
    }
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (
            calls[0].id.as_str(),
            calls[0].name.as_str(),
            calls[0].arguments.as_str()
        ),
        ("call_9", "add", r#"{"a":3,"b":4}"#)
    );
}

#[test]
fn every_way_a_call_fails_to_parse_is_told_apart() {
    let set = ToolSet::builtin();
    let call = |name: &str, args: &str| ToolCall {
        name: name.into(),
        arguments: args.into(),
        ..ToolCall::default()
    };
    assert_eq!(
        set.check(&call("get_weather", r#"{"city":"Oslo"}"#)),
        ToolCheck::Parsed
    );
    assert_eq!(
        set.check(&call("get_wether", r#"{"city":"Oslo"}"#)),
        ToolCheck::UnknownTool
    );
    assert_eq!(
        set.check(&call("get_weather", r#"{"city":"Oslo""#)),
        ToolCheck::NotJson
    );
    let not = |c| match set.check(&c) {
        ToolCheck::NotValid(why) => why,
        other => panic!("{other:?}"),
    };
    assert!(not(call("get_weather", "{}")).contains("required key `city`"));
    assert!(
        not(call("add", r#"{"a":1,"b":"2"}"#)).contains("arguments.b: expected type \"number\"")
    );
    assert!(not(call("get_weather", r#"{"city":"x","unit":"kelvin"}"#)).contains("not one of"));
    assert!(not(call("add", "[1,2]")).contains("expected type \"object\""));
    let two = set.tally(0, &[call("add", r#"{"a":1,"b":2}"#), call("add", "{")]);
    assert_eq!((two.calls, two.parsed), (2, 1));
}

#[test]
fn integer_items_and_type_lists_are_checked() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
        "maybe": {"type": ["string", "null"]}}});
    assert!(validate(&schema, &json!({"n": 3, "tags": ["a"], "maybe": null}), "a").is_ok());
    assert!(validate(&schema, &json!({"n": 3.5}), "a").is_err());
    assert_eq!(
        validate(&schema, &json!({"tags": ["a", 1]}), "arguments").unwrap_err(),
        "arguments.tags[1]: expected type \"string\", got number"
    );
}

#[test]
fn a_tools_file_is_read_in_either_shape_and_bad_entries_are_named() {
    let set = ToolSet::from_json(&json!([
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
        {"name": "g", "parameters": {"type": "object"}, "result": "ok"}
    ]))
    .unwrap();
    assert_eq!(set.tools[1].result.as_deref(), Some("ok"));
    let err = |v| ToolSet::from_json(&v).unwrap_err();
    assert_eq!(err(json!({})), "expected a JSON array of tools");
    assert_eq!(
        err(json!([{"parameters": {}}])),
        "tool 1: needs a non-empty string `name`"
    );
    let typo = err(
        json!([{"name": "f"}, {"name": "g", "parameters": {"type": "object",
        "properties": {"x": {"type": "strng"}}}}]),
    );
    assert_eq!(
        typo,
        "tool 2: `g`.parameters.properties.x.type: unknown type \"strng\" (did you mean `string`?)"
    );
    assert!(err(json!([{"name": "f"}, {"name": "f"}])).contains("given twice"));
    let chat = set.body_field(ApiKind::Chat);
    assert_eq!(chat[0]["function"]["name"], "f");
    assert_eq!(set.body_field(ApiKind::Responses)[1]["name"], "g");
}
