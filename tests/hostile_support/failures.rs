//! Broken answers, each a failure of its own class with the server's message: error
//! objects in a 200 (`server_error`), error bodies of every server family (`http_<status>`),
//! output that never ends and lines or bodies without bounds (`overlong`; the endless
//! route's `/metrics` page never ends either), a stream in
//! the wrong content type or with bad JSON (`bad_body`), a stream cut short
//! (`stream_broken`).

use std::time::Duration;

use super::{
    content, event, fails, finish, json_response, response, responses_event, role, sse,
    stream_head, Reply, Request, Route,
};

pub const ROUTES: &[Route] = &[
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
    Route {
        get: Some(endless_metrics),
        ..fails(
            "endless",
            "content forever, ignoring max_tokens",
            endless,
            "overlong",
            "the request's output limit is 16 tokens",
        )
    },
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
    Route {
        endpoint: "limits = { max_body = \"1MiB\" }",
        ..fails(
            "endless_503",
            "a 503 whose error page never ends",
            endless_503,
            "http_503",
            "upstream overloaded",
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

/// A `/metrics` page that never ends (the scrape around each run must give up).
fn endless_metrics(_: &Request) -> Reply {
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n".to_vec();
    let line = b"vllm:prefix_cache_hits_total 1\n".repeat(2048);
    Reply::Pieces {
        pieces: Box::new(std::iter::once(head).chain(std::iter::repeat(line))),
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

fn endless_503(_: &Request) -> Reply {
    let mut head = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n".to_vec();
    head.extend_from_slice(b"upstream overloaded, retry later");
    let pieces = std::iter::once(head).chain(std::iter::repeat(vec![b'.'; 64 << 10]));
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
