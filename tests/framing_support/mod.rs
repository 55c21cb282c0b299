//! A raw-TCP test server that speaks HTTP/1.1 framing the way real servers do, odd parts
//! included: one misbehaviour per server (per port, bound to 127.0.0.1:0), scripted as
//! the bytes to write for each request of each connection. It counts connections and
//! requests and keeps every request head, so a test can tell reuse from reconnects. Also
//! runs a small load through the lean client and through reqwest, the same way.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use perfplan::api::ApiKind;
use perfplan::engine::{
    run, CancelHandle, Endpoint, Load, PreparedRequest, RunConfig, Target, Timeouts, VecSource,
};
use perfplan::record::{Phase, RequestRecord};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// One thing the server does in answer to a request.
#[derive(Debug, Clone)]
pub enum Step {
    Write(Vec<u8>),
    /// Writes the bytes one at a time, each in its own segment, `gap` apart.
    Trickle(Vec<u8>, Duration),
    Sleep(Duration),
    /// Closes the connection (after the steps before it).
    Close,
}

pub fn write(bytes: impl AsRef<[u8]>) -> Step {
    Step::Write(bytes.as_ref().to_vec())
}

/// Which request a script answers: the connection's number (0-based, in accept order)
/// and the request's number on that connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub conn: usize,
    pub request: usize,
}

pub type Script = Arc<dyn Fn(At) -> Vec<Step> + Send + Sync>;

/// What the server saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub connections: AtomicUsize,
    pub requests: AtomicUsize,
    pub heads: Mutex<Vec<String>>,
}

pub struct Server {
    pub url: String,
    pub seen: Arc<Seen>,
}

impl Server {
    pub fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> usize {
        self.seen.requests.load(Ordering::SeqCst)
    }
}

/// Starts a server answering each request with `script(at)`; a connection stays open
/// for its next request unless the script closes it.
pub async fn serve(script: impl Fn(At) -> Vec<Step> + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let script: Script = Arc::new(script);
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let conn = s.connections.fetch_add(1, Ordering::SeqCst);
            sock.set_nodelay(true).unwrap();
            tokio::spawn(connection(sock, conn, script.clone(), s.clone()));
        }
    });
    Server { url, seen }
}

/// `serve` over TLS (`https://127.0.0.1:PORT`) with `config`, each handshake begun
/// `delay` after the connection was accepted (a slow TLS server). A connection counts
/// when accepted, its handshake done or not.
pub async fn serve_tls(
    config: Arc<tokio_rustls::rustls::ServerConfig>,
    delay: Duration,
    script: impl Fn(At) -> Vec<Step> + Send + Sync + 'static,
) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let script: Script = Arc::new(script);
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let conn = s.connections.fetch_add(1, Ordering::SeqCst);
            sock.set_nodelay(true).unwrap();
            let (acceptor, script, s) = (acceptor.clone(), script.clone(), s.clone());
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                if let Ok(tls) = acceptor.accept(sock).await {
                    connection(tls, conn, script, s).await;
                }
            });
        }
    });
    Server { url, seen }
}

async fn connection<S>(mut sock: S, conn: usize, script: Script, seen: Arc<Seen>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = Vec::new();
    for request in 0.. {
        let Some(head) = read_request(&mut sock, &mut buf).await else {
            return;
        };
        seen.requests.fetch_add(1, Ordering::SeqCst);
        seen.heads.lock().unwrap().push(head);
        for step in script(At { conn, request }) {
            let ok = match step {
                Step::Write(bytes) => {
                    sock.write_all(&bytes).await.is_ok() && sock.flush().await.is_ok()
                }
                Step::Trickle(bytes, gap) => trickle(&mut sock, &bytes, gap).await,
                Step::Sleep(d) => {
                    tokio::time::sleep(d).await;
                    true
                }
                Step::Close => false,
            };
            if !ok {
                let _ = sock.shutdown().await;
                return;
            }
        }
    }
}

async fn trickle<S: AsyncWrite + Unpin>(sock: &mut S, bytes: &[u8], gap: Duration) -> bool {
    for b in bytes {
        if sock.write_all(std::slice::from_ref(b)).await.is_err() || sock.flush().await.is_err() {
            return false;
        }
        tokio::time::sleep(gap).await;
    }
    true
}

/// Reads one request (head and `Content-Length` body); its head, or `None` at the end.
async fn read_request<S: AsyncRead + Unpin>(sock: &mut S, buf: &mut Vec<u8>) -> Option<String> {
    let mut tmp = [0u8; 8192];
    loop {
        if let Some(h) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..h]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    let l = l.to_ascii_lowercase();
                    l.strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if buf.len() >= h + 4 + len {
                buf.drain(..h + 4 + len);
                return Some(head);
            }
        }
        let n = sock.read(&mut tmp).await.unwrap_or(0);
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

/// An SSE stream of chat chunks carrying `words`, a finish chunk, usage and `[DONE]`.
pub fn sse(words: &[&str]) -> String {
    let mut s =
        String::from("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n");
    for w in words {
        s.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{w}\"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n");
    s.push_str(&format!(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":4,\"completion_tokens\":{},\"total_tokens\":{}}}}}\n\n",
        words.len(),
        words.len() + 4
    ));
    s.push_str("data: [DONE]\n\n");
    s
}

/// A non-streamed chat answer.
pub fn json_answer(text: &str) -> String {
    format!(
        r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"{text}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}}}"#
    )
}

/// `status line + headers + CRLF + body` with a `Content-Length`.
pub fn with_length(status: &str, headers: &str, body: &str) -> String {
    format!(
        "{status}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A 200 SSE response with a `Content-Length`, kept alive.
pub fn sse_response(words: &[&str]) -> String {
    with_length(
        "HTTP/1.1 200 OK",
        "Content-Type: text/event-stream\r\n",
        &sse(words),
    )
}

/// Traffic: `requests` chat requests, `concurrency` at a time, through the
/// lean client (`force_reqwest = false`) or reqwest.
pub struct Traffic {
    pub requests: usize,
    pub concurrency: u32,
    pub stream: bool,
    pub fresh_connections: bool,
}

impl Traffic {
    pub fn one(stream: bool) -> Traffic {
        Traffic {
            requests: 1,
            concurrency: 1,
            stream,
            fresh_connections: false,
        }
    }

    pub fn serial(requests: usize) -> Traffic {
        Traffic {
            requests,
            concurrency: 1,
            stream: true,
            fresh_connections: false,
        }
    }
}

pub fn endpoint(url: &str, load: &Traffic, force_reqwest: bool) -> Endpoint {
    let target = Target {
        base_url: url.to_string(),
        force_reqwest,
        fresh_connections: load.fresh_connections,
        timeouts: Timeouts {
            connect: Duration::from_secs(5),
            read: Duration::from_secs(3),
            total: Some(Duration::from_secs(10)),
        },
        ..Target::default()
    };
    Endpoint::new(&target, load.concurrency as usize).unwrap()
}

pub fn requests(n: usize, stream: bool) -> Vec<PreparedRequest> {
    let body = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"stream":{stream}}}"#
    );
    (0..n)
        .map(|i| PreparedRequest {
            item: i as u64,
            phase: Phase::Measured,
            kind: ApiKind::Chat,
            path: ApiKind::Chat.path().into(),
            body: Bytes::from(body.clone()),
            stream,
            client_input_tokens: Some(4),
            max_output_tokens: None,
            running_usage: false,
            headers: Vec::new(),
            session: None,
            class: None,
            cancel_after: None,
            tools: None,
            check: None,
        })
        .collect()
}

/// Runs `load` against `url` on `ep`; the records in index order.
/// A run's output and its records (sorted by index): the engine keeps none, the test does.
pub use crate::kept_support::Ran;

pub async fn run_on(ep: &Endpoint, load: &Traffic) -> Ran {
    let cfg = RunConfig {
        load: Load::Closed {
            concurrency: load.concurrency,
        },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let mut records = Vec::new();
    let output = run(
        ep,
        &mut VecSource::new(requests(load.requests, load.stream)),
        &cfg,
        &CancelHandle::new(),
        &mut |r: RequestRecord| records.push(r),
    )
    .await
    .unwrap();
    records.sort_by_key(|r| r.index);
    Ran { output, records }
}

/// The two clients, by name.
pub const CLIENTS: [(&str, bool); 2] = [("lean", false), ("reqwest", true)];

/// Runs `load` through each client against its own fresh server from `script`, and hands
/// each client's records and server to `check`.
pub async fn both<S, F>(script: S, load: Traffic, check: F)
where
    S: Fn(At) -> Vec<Step> + Clone + Send + Sync + 'static,
    F: Fn(&str, &[RequestRecord], &Server),
{
    for (name, force_reqwest) in CLIENTS {
        let server = serve(script.clone()).await;
        let ep = endpoint(&server.url, &load, force_reqwest);
        let out = run_on(&ep, &load).await;
        assert_eq!(out.records.len(), load.requests, "{name}");
        check(name, &out.records, &server);
    }
}
