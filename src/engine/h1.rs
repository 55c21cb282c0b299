//! A minimal HTTP/1.1 client for `http://` and `https://` endpoints, built for the
//! benchmark's hot path: the request head is prepared once per path, connections are kept
//! alive in a small pool (over TLS: handshaken when opened, sessions resumed on the next
//! ones, `h1_wire`), and the response body is de-chunked in place and handed to the caller
//! as slices of the read buffer (no copy, no allocation per read). Which endpoints it
//! serves and which go through reqwest is `target::lean_client`'s one rule. Knows nothing
//! about OpenAI APIs or plans.
//!
//! Why a client of our own rather than hyper's (measured in `bench/RESULTS.md`,
//! "the HTTP/1 client"): hyper's HTTP/1 connection API with the same pool, pre-connecting,
//! retry and per-read stamps passed the same hostile HTTP/1.1 suites, but took 24–44% more
//! client CPU per request (11–16% per streamed token) than this module, and under a loaded
//! machine its TTFT error p99 at c=256 went past the 5 ms target (+8.1 ms; this client
//! +4.3 ms). The rule was: hyper replaces this file if within 25% on both CPU figures and
//! every TTFT-error row; it was not, so this one stays, and its framing rules are held by
//! `tests/hostile_http.rs` against servers that misbehave.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::io::Write as _;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) use super::h1_body::BodyState;
use super::h1_head::{bad, parse_head};
pub(crate) use super::h1_head::{Framing, Head};
use super::h1_wire::{TlsDial, Wire};
use super::stamped_tcp::{Arrival, StampedTcp};
use crate::api::SseDecoder;
use crate::either_io::EitherIo;
use crate::engine::PreparedRequest;
use crate::record::TlsHandshake;

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
const READ_BUF: usize = 16 * 1024;

/// Whether the lean client asks the kernel for receive stamps: yes, unless
/// `PERFPLAN_RECEIVE_STAMPS=off` (to time reads as before, e.g. to measure the stamps'
/// cost or to rule them out).
fn receive_stamps() -> bool {
    std::env::var("PERFPLAN_RECEIVE_STAMPS").map_or(true, |v| v != "off")
}
/// An idle connection is checked for a close by the server (a keep-alive timeout) before
/// reuse once it has been idle this long; a hot loop reuses it at once, unchecked (a
/// close that races the request is met by the retry in `exchange`).
const PROBE_AFTER: Duration = Duration::from_millis(100);

/// One endpoint's connections and prepared request heads.
pub(crate) struct H1Client {
    addrs: Vec<SocketAddr>,
    /// `Host`, content type, key and custom headers, each line ending in CRLF.
    common: Vec<u8>,
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
    connect_timeout: Duration,
    /// `https://`: how each new connection becomes a TLS one.
    tls: Option<TlsDial>,
    /// Ask the kernel to stamp received data (`receive_stamps`).
    receive_stamps: bool,
}

/// One keep-alive connection with its buffers.
pub(crate) struct Conn {
    stream: Wire,
    rbuf: Vec<u8>,
    start: usize,
    end: usize,
    wbuf: Vec<u8>,
    /// When the bytes of the last read arrived (the kernel's stamp where it gave one).
    filled: Arrival,
    /// The SSE decoder's buffers, kept with the connection so a stream allocates nothing.
    pub(crate) sse: SseDecoder,
    /// Was idle in the pool (served a request before, or was pre-connected): a failure
    /// before any answer byte may be a socket the server has closed meanwhile.
    pub(crate) reused: bool,
    /// How long opening the connection took: the TCP connect and any TLS handshake.
    pub(crate) setup: Duration,
    /// The TLS handshake (`https://`).
    pub(crate) tls: Option<TlsHandshake>,
    /// Bytes of an answer arrived since the last request was written.
    answered: bool,
}

// Hand-written so that the prepared headers (with the API key) are never printed.
impl fmt::Debug for H1Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("H1Client")
            .field("addrs", &self.addrs)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn")
            .field("reused", &self.reused)
            .field("setup", &self.setup)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl H1Client {
    pub(crate) fn new(
        addrs: Vec<SocketAddr>,
        headers: &[(String, String)],
        max_idle: usize,
        connect_timeout: Duration,
    ) -> H1Client {
        let mut common = Vec::new();
        for (name, value) in headers {
            common.extend_from_slice(name.as_bytes());
            common.extend_from_slice(b": ");
            common.extend_from_slice(value.as_bytes());
            common.extend_from_slice(b"\r\n");
        }
        H1Client {
            addrs,
            common,
            idle: Mutex::new(Vec::new()),
            max_idle,
            connect_timeout,
            tls: None,
            receive_stamps: receive_stamps(),
        }
    }

    /// Makes every new connection a TLS one (`https://`).
    pub(crate) fn with_tls(mut self, dial: TlsDial) -> H1Client {
        self.tls = Some(dial);
        self
    }

    /// An idle connection the server has not closed meanwhile, or a new one.
    pub(crate) async fn checkout(&self) -> io::Result<Conn> {
        loop {
            let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
            match idle {
                Some(mut c) => {
                    if c.filled.at.elapsed() < PROBE_AFTER || c.stream.idle_and_open() {
                        return Ok(c);
                    }
                }
                None => return self.connect().await,
            }
        }
    }

    /// Drops the idle connections the server has closed (before counting them).
    pub(crate) fn prune_idle(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.retain_mut(|c| c.stream.idle_and_open());
        }
    }

    /// Opens a new connection: its TCP connect (trying each address in turn) and, for
    /// `https://`, its TLS handshake, both within `timeouts.connect` and timed together
    /// (`setup`), the handshake also alone (`tls`).
    pub(crate) async fn connect(&self) -> io::Result<Conn> {
        let began = Instant::now();
        let tcp = StampedTcp::new(self.connect_tcp().await?, self.receive_stamps);
        let (stream, tls) = match &self.tls {
            None => (EitherIo::Plain(tcp), None),
            Some(dial) => {
                let left = self.connect_timeout.saturating_sub(began.elapsed());
                let (wire, handshake) = tokio::time::timeout(left, dial.handshake(tcp))
                    .await
                    .map_err(|_| {
                        io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timeout")
                    })??;
                (wire, Some(handshake))
            }
        };
        let setup = began.elapsed();
        Ok(Conn {
            stream,
            rbuf: vec![0; READ_BUF],
            start: 0,
            end: 0,
            wbuf: Vec::with_capacity(1024),
            filled: Arrival::of(None),
            sse: SseDecoder::new(),
            reused: false,
            setup,
            tls,
            answered: false,
        })
    }

    async fn connect_tcp(&self) -> io::Result<TcpStream> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
        for addr in &self.addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    stream.set_nodelay(true)?;
                    return Ok(stream);
                }
                Ok(Err(e)) => last = e,
                Err(_) => last = io::Error::new(io::ErrorKind::TimedOut, "connect timeout"),
            }
        }
        Err(last)
    }

    /// Whether connections are kept for reuse (not with `fresh_connections`).
    pub(crate) fn pools(&self) -> bool {
        self.max_idle > 0
    }

    /// Connections idle in the pool.
    pub(crate) fn idle_count(&self) -> usize {
        self.idle.lock().map_or(0, |v| v.len())
    }

    /// Idle connections the pool may still take (0 with `fresh_connections`).
    pub(crate) fn idle_room(&self) -> usize {
        self.max_idle.saturating_sub(self.idle_count())
    }

    /// Returns a connection whose response was read to its end (or a new one, ahead of
    /// the requests: `preconnect`).
    pub(crate) fn checkin(&self, mut conn: Conn) {
        conn.reused = true;
        conn.start = 0;
        conn.end = 0;
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.max_idle {
                idle.push(conn);
            }
        }
    }

    /// Writes `POST target` of `req` (its own headers and body) on `conn`; `target` is the
    /// request URL's path and query (`control::request_target`); `ids` add an `x-request-id`
    /// header (see `request_id`) and the session header.
    pub(crate) async fn send(
        &self,
        conn: &mut Conn,
        target: &str,
        req: &PreparedRequest,
        ids: super::request_id::Ids<'_>,
    ) -> io::Result<()> {
        let body = &req.body;
        let w = &mut conn.wbuf;
        w.clear();
        w.extend_from_slice(b"POST ");
        w.extend_from_slice(target.as_bytes());
        w.extend_from_slice(b" HTTP/1.1\r\n");
        w.extend_from_slice(&self.common);
        for (name, value) in &req.headers {
            let _ = write!(w, "{name}: {value}\r\n");
        }
        ids.write(w);
        // Writing into a Vec cannot fail.
        let _ = write!(w, "Content-Length: {}\r\n\r\n", body.len());
        w.extend_from_slice(body);
        conn.answered = false;
        conn.stream.write_all(&conn.wbuf).await?;
        if conn.stream.is_tls() {
            conn.stream.flush().await?;
        }
        Ok(())
    }
}

impl Conn {
    /// Whether any byte of an answer arrived since the request was written (a reused
    /// connection that fails before that is retried on a fresh one).
    pub(crate) fn answered(&self) -> bool {
        self.answered
    }

    /// Reads more bytes after the unread ones; 0 at the end of the stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.rbuf.len() {
            if self.start > 0 {
                self.rbuf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let n = self.rbuf.len() * 2;
                self.rbuf.resize(n, 0);
            }
        }
        let n = match self.stream.read(&mut self.rbuf[self.end..]).await {
            Ok(n) => n,
            // A TLS server that closed without `close_notify` (common): the end of the
            // stream, as over plain TCP; HTTP's framing still tells a body cut short.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && self.stream.is_tls() => 0,
            Err(e) => return Err(e),
        };
        self.filled = self.stream.arrival();
        self.end += n;
        self.answered |= n > 0;
        Ok(n)
    }

    /// Reads the response head. `Ok(None)`: the connection closed before any byte.
    pub(crate) async fn read_head(&mut self) -> io::Result<Option<Head>> {
        loop {
            if self.end > self.start {
                if let Some((head, used)) = parse_head(&self.rbuf[self.start..self.end])? {
                    self.start += used;
                    if head.status >= 200 {
                        return Ok(Some(head));
                    }
                    continue; // 1xx: the real answer follows
                }
                if self.end - self.start > MAX_HEAD {
                    return Err(bad("response head too large"));
                }
            }
            if self.fill().await? == 0 {
                return if self.end == self.start {
                    Ok(None)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed inside the response head",
                    ))
                };
            }
        }
    }

    /// Delivers the next body bytes to `on_data` with their arrival. Returns false once
    /// the body has ended.
    pub(crate) async fn read_body(
        &mut self,
        body: &mut BodyState,
        mut on_data: impl FnMut(&[u8], Arrival),
    ) -> io::Result<bool> {
        if body.done() {
            return Ok(false);
        }
        if self.start == self.end && self.fill().await? == 0 {
            return body.at_close();
        }
        let input = &self.rbuf[self.start..self.end];
        let at = self.filled;
        let used = body.feed(input, |d| on_data(d, at))?;
        self.start += used;
        Ok(!body.done())
    }
}
