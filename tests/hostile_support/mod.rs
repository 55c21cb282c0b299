//! A deliberately hostile OpenAI-compatible server for the tests: one misbehaviour per
//! route, each route on a port of its own (127.0.0.1, ephemeral), so an endpoint's
//! `base_url` is `HostileServer::url(route)` and the request's path does not matter;
//! `GET .../v1/models` answers on every port (the connection test). A connection is served
//! on its own thread, request after request while the route's replies keep it alive.
//!
//! Routes live in files by theme and are listed in [`routes`]: `shapes.rs` holds odd but
//! valid answers, `failures.rs` broken ones (error objects and bodies, endless output,
//! oversized lines and bodies); a file of HTTP framing misbehaviours can sit beside them.
//! A route is a name, a sentence, a function from the request to a [`Reply`], the outcome
//! perfplan must reach, and the plan keys its endpoint and run need.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod failures;
pub mod shapes;
pub mod trust;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// One request as the route sees it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The request target (`/v1/chat/completions`).
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The request's `max_tokens` (or `max_output_tokens`), if it sent one.
    pub fn max_tokens(&self) -> Option<u64> {
        let v = self.json()?;
        v.get("max_tokens")
            .or_else(|| v.get("max_output_tokens"))
            .and_then(Value::as_u64)
    }
}

/// What a route answers.
pub enum Reply {
    /// These bytes, then the connection is closed.
    Close(Vec<u8>),
    /// These bytes; the connection then serves the next request.
    KeepAlive(Vec<u8>),
    /// Pieces written and flushed one at a time, `pause` apart, until the iterator ends or
    /// the client hangs up; then (no pause after the last) the connection is closed.
    Pieces {
        pieces: Box<dyn Iterator<Item = Vec<u8>> + Send>,
        pause: Duration,
    },
}

/// One misbehaviour, with what perfplan must make of it.
#[derive(Clone, Copy)]
pub struct Route {
    pub name: &'static str,
    pub what: &'static str,
    pub reply: fn(&Request) -> Reply,
    pub expect: Expect,
    /// Extra keys of the route's endpoint table in a plan (TOML), e.g. `api = "responses"`.
    pub endpoint: &'static str,
    /// Extra keys of the route's run (a matrix `include` entry), e.g. `stream = false`.
    pub run: &'static str,
    /// The answer to a `GET` other than `/v1/models` (the `/metrics` scrape); default 404.
    pub get: Option<fn(&Request) -> Reply>,
}

/// The outcome every request of a route must have.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// A success with this many output tokens.
    Ok(Tokens),
    /// A failure of `class` (`server_error`, `http_404`, ...) whose error holds `error`.
    Fails {
        class: &'static str,
        error: &'static str,
    },
}

/// The output tokens of a success.
#[derive(Clone, Copy, Debug)]
pub enum Tokens {
    /// Reported in usage.
    Usage(u32),
    /// No usage: the client's tokenizer count of this text.
    Client(&'static str),
}

/// Every route of every file.
pub fn routes() -> Vec<Route> {
    shapes::ROUTES
        .iter()
        .chain(failures::ROUTES)
        .copied()
        .collect()
}

/// The running server (every route's port); it stops when the test process ends.
pub struct HostileServer {
    addrs: HashMap<&'static str, SocketAddr>,
    seen: Arc<Seen>,
}

impl HostileServer {
    pub fn start() -> HostileServer {
        HostileServer::start_with(routes())
    }

    /// A server of `routes` only (e.g. `trust::ROUTES`, which make runs untrustworthy).
    pub fn start_with(routes: Vec<Route>) -> HostileServer {
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let mut addrs = HashMap::new();
        for route in routes {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            addrs.insert(route.name, listener.local_addr().unwrap());
            let seen = seen.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    let Ok(conn) = conn else { continue };
                    let seen = seen.clone();
                    std::thread::spawn(move || serve(conn, &route, &seen));
                }
            });
        }
        HostileServer { addrs, seen }
    }

    /// The base URL of `route`.
    pub fn url(&self, route: &str) -> String {
        format!("http://{}", self.addrs[route])
    }

    /// API requests (`POST`) the route has received.
    pub fn seen(&self, route: &str) -> u64 {
        self.bodies(route).len() as u64
    }

    /// The bodies of the route's API requests, in arrival order.
    pub fn bodies(&self, route: &str) -> Vec<Vec<u8>> {
        self.seen
            .lock()
            .unwrap()
            .get(route)
            .cloned()
            .unwrap_or_default()
    }
}

type Seen = Mutex<HashMap<String, Vec<Vec<u8>>>>;

const MODELS: &str = r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#;

fn serve(mut conn: TcpStream, route: &Route, seen: &Seen) {
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut conn, &mut buf) {
        let reply = if req.method != "POST" {
            // The connection test; anything else (a `/metrics` scrape) is not there.
            match (req.path.ends_with("/v1/models"), route.get) {
                (true, _) => Reply::KeepAlive(json_response(200, MODELS)),
                (false, Some(get)) => get(&req),
                (false, None) => Reply::KeepAlive(json_response(404, r#"{"detail":"Not Found"}"#)),
            }
        } else {
            let mut seen = seen.lock().unwrap();
            seen.entry(route.name.to_string())
                .or_default()
                .push(req.body.clone());
            drop(seen);
            (route.reply)(&req)
        };
        match reply {
            Reply::KeepAlive(bytes) => {
                if conn.write_all(&bytes).is_err() {
                    return;
                }
            }
            Reply::Close(bytes) => {
                let _ = conn.write_all(&bytes);
                return;
            }
            Reply::Pieces { pieces, pause } => {
                // The pause is between pieces: the connection closes right after the last.
                let mut pieces = pieces.peekable();
                while let Some(piece) = pieces.next() {
                    if conn.write_all(&piece).and_then(|()| conn.flush()).is_err() {
                        return;
                    }
                    if !pause.is_zero() && pieces.peek().is_some() {
                        std::thread::sleep(pause);
                    }
                }
                return;
            }
        }
    }
}

/// Reads one request (head and `Content-Length` body); `None` when the client is gone.
fn read_request(conn: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let mut tmp = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        match conn.read(&mut tmp) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + 4 + length {
        match conn.read(&mut tmp) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    let body = buf[head_end + 4..head_end + 4 + length].to_vec();
    buf.drain(..head_end + 4 + length);
    Some(Request {
        method,
        path: target,
        headers,
        body,
    })
}

/// A whole response with a JSON body, kept alive.
pub fn json_response(status: u16, body: &str) -> Vec<u8> {
    response(status, "application/json", body.as_bytes())
}

/// A whole response with `content_type` and a `Content-Length`.
pub fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        reason(status),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// The head of a streamed answer whose body ends when the connection closes.
pub fn stream_head(content_type: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    )
    .into_bytes()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// `data: <json>\n\n`.
pub fn event(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// A chat chunk whose choice 0 has `delta` (a JSON object) and `finish` (JSON).
pub fn chat_chunk(delta: &str, finish: &str) -> String {
    event(&format!(
        r#"{{"id":"chatcmpl-h","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{finish}}}]}}"#
    ))
}

/// A content chunk of choice 0.
pub fn content(text: &str) -> String {
    chat_chunk(&format!(r#"{{"content":{}}}"#, Value::from(text)), "null")
}

/// The usage-only chunk that ends a stream with `include_usage`.
pub fn usage_chunk(prompt: u32, completion: u32) -> String {
    event(&format!(
        r#"{{"id":"chatcmpl-h","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{}}}}}"#,
        prompt + completion
    ))
}

/// A whole streamed answer: the head, `events`, `[DONE]`, then the connection closes.
pub fn sse(events: &[String]) -> Reply {
    let mut out = stream_head("text/event-stream");
    for e in events {
        out.extend_from_slice(e.as_bytes());
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    Reply::Close(out)
}

pub const fn ok(
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
        get: None,
    }
}

pub const fn fails(
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
        get: None,
    }
}

pub fn role() -> String {
    chat_chunk(r#"{"role":"assistant","content":""}"#, "null")
}

pub fn finish(reason: &str) -> String {
    chat_chunk("{}", &format!("\"{reason}\""))
}

/// One typed event of the Responses API.
pub fn responses_event(kind: &str, rest: &str) -> String {
    format!("event: {kind}\ndata: {{\"type\":\"{kind}\",{rest}}}\n\n")
}
