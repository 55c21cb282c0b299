//! A minimal HTTP/1.1 client for plain `http://` endpoints, built for the benchmark's hot
//! path: the request head is prepared once per path, connections are kept alive in a
//! small pool, and the response body is de-chunked in place and handed to the caller as
//! slices of the read buffer (no copy, no allocation per read). `https://` endpoints use
//! reqwest instead. Knows nothing about OpenAI APIs or plans.
//!
//! Why a client of our own rather than hyper's (issue 16, measured in `bench/RESULTS.md`,
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

use super::h1_head::{bad, parse_head};
pub(crate) use super::h1_head::{Framing, Head};
use crate::api::SseDecoder;
use crate::engine::PreparedRequest;

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
const READ_BUF: usize = 16 * 1024;
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
}

/// One keep-alive connection with its buffers.
pub(crate) struct Conn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    start: usize,
    end: usize,
    wbuf: Vec<u8>,
    /// When the last read returned (the arrival time of the bytes in the buffer).
    filled_at: Instant,
    /// The SSE decoder's buffers, kept with the connection so a stream allocates nothing.
    pub(crate) sse: SseDecoder,
    /// Was idle in the pool (served a request before, or was pre-connected): a failure
    /// before any answer byte may be a socket the server has closed meanwhile.
    pub(crate) reused: bool,
    /// How long the TCP connect took.
    pub(crate) setup: Duration,
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
        }
    }

    /// An idle connection, or a new one.
    /// An idle connection the server has not closed meanwhile, or a new one.
    pub(crate) async fn checkout(&self) -> io::Result<Conn> {
        loop {
            let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
            match idle {
                Some(c) if c.filled_at.elapsed() < PROBE_AFTER || c.idle_and_open() => {
                    return Ok(c)
                }
                Some(_) => {}
                None => return self.connect().await,
            }
        }
    }

    /// Drops the idle connections the server has closed (before counting them).
    pub(crate) fn prune_idle(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.retain(Conn::idle_and_open);
        }
    }

    /// Opens a new connection (trying each address in turn), timing its TCP connect.
    pub(crate) async fn connect(&self) -> io::Result<Conn> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
        let began = Instant::now();
        for addr in &self.addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    let setup = began.elapsed();
                    stream.set_nodelay(true)?;
                    return Ok(Conn {
                        stream,
                        rbuf: vec![0; READ_BUF],
                        start: 0,
                        end: 0,
                        wbuf: Vec::with_capacity(1024),
                        filled_at: Instant::now(),
                        sse: SseDecoder::new(),
                        reused: false,
                        setup,
                        answered: false,
                    });
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
        conn.stream.write_all(&conn.wbuf).await
    }
}

impl Conn {
    /// An idle connection is still usable: the runtime has seen neither its close nor
    /// stray bytes (no system call unless the socket became readable). A close that
    /// arrives later is met by the retry in `exchange`.
    fn idle_and_open(&self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

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
        let n = self.stream.read(&mut self.rbuf[self.end..]).await?;
        self.filled_at = Instant::now();
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

    /// Delivers the next body bytes to `on_data` with the instant they arrived. Returns
    /// false once the body has ended.
    pub(crate) async fn read_body(
        &mut self,
        body: &mut BodyState,
        mut on_data: impl FnMut(&[u8], Instant),
    ) -> io::Result<bool> {
        if body.done() {
            return Ok(false);
        }
        if self.start == self.end && self.fill().await? == 0 {
            return match body.framing {
                Framing::UntilClose => {
                    body.ended = true;
                    Ok(false)
                }
                _ => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed inside the body",
                )),
            };
        }
        let input = &self.rbuf[self.start..self.end];
        let at = self.filled_at;
        let used = body.feed(input, |d| on_data(d, at))?;
        self.start += used;
        Ok(!body.done())
    }
}

/// Where a body stands: framing and, for chunked bodies, the decoder state.
#[derive(Debug)]
pub(crate) struct BodyState {
    framing: Framing,
    remaining: u64,
    chunk: ChunkState,
    ended: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    Size { value: u64, digits: bool },
    Ext(u64),
    SizeLf(u64),
    Data(u64),
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    TrailerLf { empty: bool },
    Done,
}

impl BodyState {
    pub(crate) fn new(framing: Framing) -> BodyState {
        let remaining = match framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        BodyState {
            framing,
            remaining,
            chunk: ChunkState::Size {
                value: 0,
                digits: false,
            },
            ended: false,
        }
    }

    /// The body has ended (the connection may serve another request unless `UntilClose`).
    pub(crate) fn done(&self) -> bool {
        match self.framing {
            Framing::Length(_) => self.remaining == 0,
            Framing::Chunked => self.chunk == ChunkState::Done,
            Framing::UntilClose => self.ended,
        }
    }

    /// Consumes framing from `input`, handing data to `on_data`; returns bytes used.
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> io::Result<usize> {
        match self.framing {
            Framing::UntilClose => {
                on_data(input);
                Ok(input.len())
            }
            Framing::Length(_) => {
                let n = (self.remaining.min(input.len() as u64)) as usize;
                if n > 0 {
                    on_data(&input[..n]);
                }
                self.remaining -= n as u64;
                Ok(n)
            }
            Framing::Chunked => self.feed_chunked(input, &mut on_data),
        }
    }

    fn feed_chunked(&mut self, input: &[u8], on_data: &mut impl FnMut(&[u8])) -> io::Result<usize> {
        use ChunkState::*;
        let mut i = 0;
        while i < input.len() && self.chunk != Done {
            if let Data(rem) = self.chunk {
                let n = rem.min((input.len() - i) as u64) as usize;
                on_data(&input[i..i + n]);
                i += n;
                let left = rem - n as u64;
                self.chunk = if left == 0 { DataCr } else { Data(left) };
                continue;
            }
            let b = input[i];
            i += 1;
            self.chunk = match (self.chunk, b) {
                (Size { value, .. }, b) if b.is_ascii_hexdigit() => {
                    let d = u64::from((b as char).to_digit(16).unwrap_or(0));
                    let v = value.checked_mul(16).and_then(|v| v.checked_add(d));
                    Size {
                        value: v.ok_or_else(|| bad("chunk size overflow"))?,
                        digits: true,
                    }
                }
                (
                    Size {
                        value,
                        digits: true,
                    },
                    b'\r',
                )
                | (Ext(value), b'\r') => SizeLf(value),
                (
                    Size {
                        value,
                        digits: true,
                    },
                    b'\n',
                )
                | (Ext(value), b'\n') => after_size(value),
                (
                    Size {
                        value,
                        digits: true,
                    },
                    b';' | b' ' | b'\t',
                ) => Ext(value),
                (Ext(value), _) => Ext(value),
                (SizeLf(value), b'\n') => after_size(value),
                (DataCr, b'\r') => DataLf,
                (DataCr, b'\n') | (DataLf, b'\n') => Size {
                    value: 0,
                    digits: false,
                },
                (TrailerStart, b'\r') => TrailerLf { empty: true },
                (TrailerStart, b'\n') => Done,
                (TrailerStart, _) | (TrailerLine, _) if b != b'\r' => TrailerLine,
                (TrailerLine, b'\r') => TrailerLf { empty: false },
                (TrailerLf { empty: true }, b'\n') => Done,
                (TrailerLf { empty: false }, b'\n') => TrailerStart,
                _ => return Err(bad("malformed chunked body")),
            };
        }
        Ok(i)
    }
}

fn after_size(value: u64) -> ChunkState {
    if value == 0 {
        ChunkState::TrailerStart
    } else {
        ChunkState::Data(value)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const CHUNKED: &[u8] =
        b"5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";

    fn decode(pieces: &[&[u8]]) -> (Vec<u8>, bool) {
        let mut b = BodyState::new(Framing::Chunked);
        let mut out = Vec::new();
        for p in pieces {
            let mut rest: &[u8] = p;
            while !rest.is_empty() && !b.done() {
                let n = b.feed(rest, |d| out.extend_from_slice(d)).unwrap();
                rest = &rest[n..];
            }
        }
        (out, b.done())
    }

    #[test]
    fn chunked_any_split() {
        for i in 0..=CHUNKED.len() {
            let (out, done) = decode(&[&CHUNKED[..i], &CHUNKED[i..]]);
            assert_eq!(out, b"hello 0123456789", "split {i}");
            assert!(done);
        }
        let (_, done) = decode(&[b"0\r\n\r\n"]);
        assert!(done);
        let mut b = BodyState::new(Framing::Chunked);
        assert!(b.feed(b"zz\r\n", |_| {}).is_err());
    }
}
