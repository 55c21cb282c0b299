//! Odd but valid answers, each a success with the right token counts: reasoning then
//! answer, function calls (chat and Responses API), usage on every chunk or nowhere,
//! several choices, comments and CRLF, a wrong but harmless content type, a whole-body
//! function call, multi-turn answers, and a stream with no output at all (a success that
//! is counted and warned about).

use std::time::Duration;

use super::{
    chat_chunk, content, event, finish, json_response, ok, responses_event, role, sse, stream_head,
    usage_chunk, Reply, Request, Route, Tokens,
};

/// The function-call arguments the tool-call routes stream, in fragments.
const ARGS: [&str; 5] = [
    r#"{"city": "#,
    r#""Par"#,
    r#"is", "#,
    r#""unit": "#,
    r#""c"}"#,
];

pub const ROUTES: &[Route] = &[
    ok(
        "content",
        "plain content deltas, usage at the end",
        plain,
        Tokens::Usage(4),
    ),
    ok(
        "reasoning_content",
        "reasoning_content deltas, then the answer, 30 ms apart",
        reasoning_content,
        Tokens::Usage(5),
    ),
    ok(
        "reasoning",
        "`reasoning` deltas (vLLM's newer name), then the answer",
        reasoning,
        Tokens::Usage(3),
    ),
    ok(
        "tool_calls",
        "a function call: name, then argument fragments",
        tool_calls,
        Tokens::Usage(7),
    ),
    ok(
        "tool_calls_no_usage",
        "a function call and no usage: counted by the client",
        tool_calls_no_usage,
        Tokens::Client(r#"get_weather{"city": "Paris", "unit": "c"}"#),
    ),
    ok(
        "usage_every_chunk",
        "usage on every chunk, growing: the last figure counts, not the sum",
        usage_every_chunk,
        Tokens::Usage(5),
    ),
    ok(
        "no_usage",
        "no usage anywhere: counted by the client",
        no_usage,
        Tokens::Client("Hello there, friend!"),
    ),
    Route {
        run: "n = 2",
        ..ok(
            "n2",
            "two choices interleaved (n = 2): choice 0 is timed",
            two_choices,
            Tokens::Usage(6),
        )
    },
    ok(
        "comments_crlf",
        "`: ping` comments and CRLF line ends",
        comments_crlf,
        Tokens::Usage(3),
    ),
    ok(
        "text_plain",
        "an event stream labelled text/plain",
        text_plain,
        Tokens::Usage(2),
    ),
    Route {
        run: "stream = false",
        ..ok(
            "whole_tool_call",
            "a non-streamed function call without usage",
            whole_tool_call,
            Tokens::Client(r#"lookup{"q": "rust"}"#),
        )
    },
    Route {
        endpoint: r#"api = "responses""#,
        ..ok(
            "responses_tool",
            "a Responses API stream of function-call argument deltas",
            responses_tool,
            Tokens::Usage(4),
        )
    },
    Route {
        run: r#"dataset = "conv""#,
        ..ok(
            "multi_turn",
            "the answers of a multi-turn conversation, without usage",
            multi_turn,
            Tokens::Client("Fine, thanks."),
        )
    },
    Route {
        run: r#"dataset = "trace""#,
        ..ok(
            "trace_no_usage",
            "recorded requests replayed, answered without usage",
            no_usage,
            Tokens::Client("Hello there, friend!"),
        )
    },
    ok(
        "empty_output",
        "a stream with no output at all (counted and warned about)",
        empty_output,
        Tokens::Usage(0),
    ),
];

fn plain(_: &Request) -> Reply {
    let parts = ["Hel", "lo", " wor", "ld"].map(content);
    sse(&[&[role()], &parts[..], &[finish("stop"), usage_chunk(9, 4)]].concat())
}

fn paced(events: Vec<String>, pause_ms: u64) -> Reply {
    let mut pieces = vec![stream_head("text/event-stream")];
    pieces.extend(events.into_iter().map(String::into_bytes));
    pieces.push(b"data: [DONE]\n\n".to_vec());
    Reply::Pieces {
        pieces: Box::new(pieces.into_iter()),
        pause: Duration::from_millis(pause_ms),
    }
}

fn thinking(field: &str, steps: &[&str], answer: &[&str], usage: (u32, u32)) -> Vec<String> {
    let mut events = vec![role()];
    for s in steps {
        let delta = format!(
            r#"{{"{field}":{},"content":null}}"#,
            serde_json::Value::from(*s)
        );
        events.push(chat_chunk(&delta, "null"));
    }
    events.extend(answer.iter().map(|a| content(a)));
    events.extend([finish("stop"), usage_chunk(usage.0, usage.1)]);
    events
}

fn reasoning_content(_: &Request) -> Reply {
    paced(
        thinking(
            "reasoning_content",
            &["Let", " me", " think"],
            &["Ye", "s"],
            (9, 5),
        ),
        30,
    )
}

fn reasoning(_: &Request) -> Reply {
    sse(&thinking("reasoning", &["Hm", "m"], &["No"], (9, 3)))
}

fn tool_call_events(name: &str) -> Vec<String> {
    let first = format!(
        r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{{"name":"{name}","arguments":""}}}}]}}"#
    );
    let mut events = vec![chat_chunk(&first, "null")];
    for a in ARGS {
        let delta = format!(
            r#"{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}"#,
            serde_json::Value::from(a)
        );
        events.push(chat_chunk(&delta, "null"));
    }
    events.push(finish("tool_calls"));
    events
}

fn tool_calls(_: &Request) -> Reply {
    let mut events = tool_call_events("get_weather");
    events.push(usage_chunk(120, 7));
    sse(&events)
}

fn tool_calls_no_usage(_: &Request) -> Reply {
    sse(&tool_call_events("get_weather"))
}

fn usage_every_chunk(_: &Request) -> Reply {
    let mut events = Vec::new();
    for (k, text) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        events.push(event(&format!(
            r#"{{"choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":{}}}],"usage":{{"prompt_tokens":9,"completion_tokens":{},"total_tokens":{}}}}}"#,
            if k == 4 { "\"length\"" } else { "null" },
            k + 1,
            k + 10
        )));
    }
    sse(&events)
}

fn no_usage(_: &Request) -> Reply {
    let parts = ["Hello", " there", ",", " friend", "!"].map(content);
    sse(&[&[role()], &parts[..], &[finish("stop")]].concat())
}

fn two_choices(_: &Request) -> Reply {
    let mut events = Vec::new();
    for (i, text) in ["one", "uno", " two", " dos", " three", " tres"]
        .iter()
        .enumerate()
    {
        events.push(event(&format!(
            r#"{{"choices":[{{"index":{},"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#,
            i % 2
        )));
    }
    events.extend([finish("length"), usage_chunk(9, 6)]);
    sse(&events)
}

fn comments_crlf(_: &Request) -> Reply {
    let mut body = String::from(": ping - 2026-11-29 07:57:57.493379+00:00\n\n");
    body.push_str(&role());
    body.push_str(&[content("a"), content("b"), content("c"), finish("length")].concat());
    body.push_str(": ping\n\n");
    body.push_str(&usage_chunk(9, 3));
    body.push_str("data: [DONE]\n\n");
    let mut out = stream_head("text/event-stream");
    out.extend_from_slice(body.replace('\n', "\r\n").as_bytes());
    Reply::Close(out)
}

fn text_plain(_: &Request) -> Reply {
    let mut out = stream_head("text/plain; charset=utf-8");
    let events = [
        role(),
        content("o"),
        content("k"),
        finish("stop"),
        usage_chunk(9, 2),
    ]
    .concat();
    out.extend_from_slice(events.as_bytes());
    out.extend_from_slice(b"data: [DONE]\n\n");
    Reply::Close(out)
}

fn whole_tool_call(_: &Request) -> Reply {
    let body = r#"{"id":"chatcmpl-h","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\": \"rust\"}"}}]},"finish_reason":"tool_calls"}]}"#;
    Reply::KeepAlive(json_response(200, body))
}

fn responses_tool(_: &Request) -> Reply {
    let mut out = stream_head("text/event-stream");
    let mut body = responses_event(
        "response.created",
        r#""response":{"id":"resp_1","status":"in_progress"}"#,
    );
    body.push_str(&responses_event(
        "response.output_item.added",
        r#""output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}"#,
    ));
    for a in &ARGS[..4] {
        let rest = format!(
            r#""item_id":"fc_1","output_index":0,"delta":{}"#,
            serde_json::Value::from(*a)
        );
        body.push_str(&responses_event(
            "response.function_call_arguments.delta",
            &rest,
        ));
    }
    body.push_str(&responses_event(
        "response.completed",
        r#""response":{"id":"resp_1","status":"completed","usage":{"input_tokens":30,"output_tokens":4,"total_tokens":34}}"#,
    ));
    out.extend_from_slice(body.as_bytes());
    Reply::Close(out)
}

fn multi_turn(_: &Request) -> Reply {
    let parts = ["Fine", ",", " thanks", "."].map(content);
    sse(&[&[role()], &parts[..], &[finish("stop")]].concat())
}

fn empty_output(_: &Request) -> Reply {
    sse(&[role(), finish("stop"), usage_chunk(9, 0)])
}
