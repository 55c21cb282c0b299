//! What a server says: odd but valid response shapes (each a success with the right token
//! counts), and broken ones (each a failure of its own class): error objects in a 200,
//! error bodies of every server family, no output at all, output that never ends, lines
//! and bodies without bounds, wrong content types, bad JSON, streams cut short.

use std::time::Duration;

use super::{
    chat_chunk, content, event, json_response, response, sse, stream_head, usage_chunk, Expect,
    Reply, Request, Route, Tokens,
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
    ok(
        "n2",
        "two choices interleaved (n = 2): choice 0 is timed",
        two_choices,
        Tokens::Usage(6),
    ),
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
    ok(
        "empty_output",
        "a stream with no output at all (counted and warned about)",
        empty_output,
        Tokens::Usage(0),
    ),
    fails(
        "error_midstream",
        "an error object after some content, in a 200",
        error_midstream,
        "server_error",
        "engine died (InternalServerError, code 500)",
    ),
    fails(
        "error_event",
        "an `event: error` with SGLang's error shape",
        error_event,
        "server_error",
        "out of KV cache blocks (ServiceUnavailable, code 503)",
    ),
    Route {
        run: "stream = false",
        ..fails(
            "error_200_body",
            "a 200 whose body is an error object",
            error_200_body,
            "server_error",
            "prompt is too long (BadRequestError, code 400)",
        )
    },
    Route {
        endpoint: r#"api = "responses""#,
        ..fails(
            "responses_failed",
            "a Responses stream that ends in response.failed",
            responses_failed,
            "server_error",
            "engine died (code server_error)",
        )
    },
    fails(
        "openai_404",
        "OpenAI's error body with 404",
        openai_404,
        "http_404",
        "The model `m` does not exist. (NotFoundError, code 404)",
    ),
    fails(
        "vllm_400",
        "vLLM's error body with 400",
        vllm_400,
        "http_400",
        "you requested 4096 tokens. (BadRequestError, code 400)",
    ),
    fails(
        "sglang_400",
        "SGLang's `object: error` body with 400",
        sglang_400,
        "http_400",
        "Input length exceeds the maximum allowed length (BadRequest, code 400)",
    ),
    fails(
        "tgi_422",
        "TGI's error body with 422",
        tgi_422,
        "http_422",
        "Input validation error: `max_new_tokens` must be strictly positive (validation)",
    ),
    fails(
        "tgi_503",
        "TGI's overloaded error with 503",
        tgi_503,
        "http_503",
        "Model is overloaded (overloaded)",
    ),
    fails(
        "proxy_502",
        "an HTML page from a proxy with 502",
        proxy_502,
        "http_502",
        "<h1>502 Bad Gateway</h1>",
    ),
    fails(
        "endless",
        "content forever, ignoring max_tokens",
        endless,
        "overlong",
        "the request's output limit is 16 tokens",
    ),
    Route {
        endpoint: "reject_fields = [\"max_tokens\"]\nlimits = { max_chunks = 500 }",
        ..fails(
            "endless_no_limit",
            "content forever to a request without an output limit",
            endless,
            "overlong",
            "cut after 500 output chunks: the request sent no output limit",
        )
    },
    fails(
        "endless_line",
        "one SSE line that never ends",
        endless_line,
        "overlong",
        "an SSE line or event longer than 4 MiB",
    ),
    Route {
        endpoint: "limits = { max_body = \"1MiB\" }",
        run: "stream = false",
        ..fails(
            "endless_body",
            "a non-streamed body that never ends",
            endless_body,
            "overlong",
            "the response body is larger than 1 MiB",
        )
    },
    fails(
        "sse_as_json",
        "an event stream labelled application/json",
        sse_as_json,
        "bad_body",
        "unparsable body",
    ),
    fails(
        "invalid_json_chunk",
        "a chunk that is not JSON",
        invalid_json_chunk,
        "bad_body",
        "unparsable chunk",
    ),
    fails(
        "cut_without_done",
        "content, then the connection closes",
        cut_without_done,
        "stream_broken",
        "stream closed without [DONE]",
    ),
];

const fn ok(
    name: &'static str,
    what: &'static str,
    reply: fn(&Request) -> Reply,
    tokens: Tokens,
) -> Route {
    Route {
        name,
        what,
        reply,
        expect: Expect::Ok(tokens),
        endpoint: "",
        run: "",
    }
}

const fn fails(
    name: &'static str,
    what: &'static str,
    reply: fn(&Request) -> Reply,
    class: &'static str,
    error: &'static str,
) -> Route {
    Route {
        name,
        what,
        reply,
        expect: Expect::Fails { class, error },
        endpoint: "",
        run: "",
    }
}

fn role() -> String {
    chat_chunk(r#"{"role":"assistant","content":""}"#, "null")
}

fn finish(reason: &str) -> String {
    chat_chunk("{}", &format!("\"{reason}\""))
}

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

fn responses_event(kind: &str, rest: &str) -> String {
    format!("event: {kind}\ndata: {{\"type\":\"{kind}\",{rest}}}\n\n")
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

fn error_midstream(_: &Request) -> Reply {
    let error = event(
        r#"{"error":{"message":"engine died","type":"InternalServerError","param":null,"code":500}}"#,
    );
    sse(&[role(), content("a"), content("b"), error])
}

fn error_event(_: &Request) -> Reply {
    let error = "event: error\ndata: {\"object\":\"error\",\"message\":\"out of KV cache blocks\",\"type\":\"ServiceUnavailable\",\"param\":null,\"code\":503}\n\n";
    sse(&[role(), content("a"), error.to_string()])
}

fn error_200_body(_: &Request) -> Reply {
    Reply::KeepAlive(json_response(
        200,
        r#"{"object":"error","message":"prompt is too long","type":"BadRequestError","param":null,"code":400}"#,
    ))
}

fn responses_failed(_: &Request) -> Reply {
    let mut out = stream_head("text/event-stream");
    let mut body = responses_event(
        "response.created",
        r#""response":{"id":"resp_1","status":"in_progress"}"#,
    );
    body.push_str(&responses_event(
        "response.output_text.delta",
        r#""item_id":"m","output_index":0,"delta":"Hi""#,
    ));
    body.push_str(&responses_event(
        "response.failed",
        r#""response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"engine died"}}"#,
    ));
    out.extend_from_slice(body.as_bytes());
    Reply::Close(out)
}

fn openai_404(_: &Request) -> Reply {
    Reply::KeepAlive(json_response(
        404,
        r#"{"error":{"message":"The model `m` does not exist.","type":"NotFoundError","param":null,"code":404}}"#,
    ))
}

fn vllm_400(_: &Request) -> Reply {
    Reply::KeepAlive(json_response(
        400,
        r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 4096 tokens.","type":"BadRequestError","param":null,"code":400}}"#,
    ))
}

fn sglang_400(_: &Request) -> Reply {
    Reply::KeepAlive(json_response(
        400,
        r#"{"object":"error","message":"Input length exceeds the maximum allowed length","type":"BadRequest","param":null,"code":400}"#,
    ))
}

fn tgi_422(_: &Request) -> Reply {
    Reply::KeepAlive(json_response(
        422,
        r#"{"error":"Input validation error: `max_new_tokens` must be strictly positive","error_type":"validation"}"#,
    ))
}

fn tgi_503(_: &Request) -> Reply {
    Reply::KeepAlive(json_response(
        503,
        r#"{"error":"Model is overloaded","error_type":"overloaded"}"#,
    ))
}

fn proxy_502(_: &Request) -> Reply {
    let page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>";
    Reply::KeepAlive(response(502, "text/html", page))
}

/// Content chunks forever (until the client hangs up), a few hundred per write.
fn endless(_: &Request) -> Reply {
    let block = content(&"x".repeat(16)).repeat(200).into_bytes();
    let pieces = std::iter::once(stream_head("text/event-stream")).chain(std::iter::repeat(block));
    Reply::Pieces {
        pieces: Box::new(pieces),
        pause: Duration::ZERO,
    }
}

fn endless_line(_: &Request) -> Reply {
    let mut head = stream_head("text/event-stream");
    head.extend_from_slice(br#"data: {"choices":[{"index":0,"delta":{"content":""#);
    let pieces = std::iter::once(head).chain(std::iter::repeat(vec![b'x'; 64 << 10]));
    Reply::Pieces {
        pieces: Box::new(pieces),
        pause: Duration::ZERO,
    }
}

fn endless_body(_: &Request) -> Reply {
    let mut head =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n".to_vec();
    head.extend_from_slice(br#"{"choices":[{"index":0,"message":{"content":""#);
    let pieces = std::iter::once(head).chain(std::iter::repeat(vec![b'y'; 64 << 10]));
    Reply::Pieces {
        pieces: Box::new(pieces),
        pause: Duration::ZERO,
    }
}

fn sse_as_json(_: &Request) -> Reply {
    let mut out = stream_head("application/json");
    out.extend_from_slice(
        [
            role(),
            content("a"),
            finish("stop"),
            "data: [DONE]\n\n".into(),
        ]
        .concat()
        .as_bytes(),
    );
    Reply::Close(out)
}

fn invalid_json_chunk(_: &Request) -> Reply {
    sse(&[
        role(),
        content("a"),
        "data: {\"choices\":[{\"delta\":\n\n".to_string(),
    ])
}

fn cut_without_done(_: &Request) -> Reply {
    let mut out = stream_head("text/event-stream");
    out.extend_from_slice([role(), content("a"), content("b")].concat().as_bytes());
    Reply::Close(out)
}
