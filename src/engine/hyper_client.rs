//! hyper's HTTP/1 connection API (`hyper::client::conn::http1`) with perfplan's own small
//! pool, as an alternative to the lean client (`h1`) for plain `http://` endpoints: the A/B
//! of issue 16 (`bench/RESULTS.md`). Chosen per process with `PERFPLAN_HTTP1_CLIENT=hyper`
//! (read when an endpoint is built), never by a plan.
//!
//! The same rules as the lean client: the request target from the URL rule, connection
//! setup timed and pre-connected, a pooled connection closed before any answer byte
//! retried once on a fresh one (timed from there), one timestamp per socket read, the
//! idle-read and total timeouts of `exchange`. Each connection's hyper state machine is
//! driven inside the request's own task (no task per connection, no hand-off per chunk):
//! [`drive`] polls it beside whatever the request waits for.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, TRANSFER_ENCODING};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, Connection, SendRequest};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::exchange::{connect_failure, deadline, timed_out, until_head, Failure};
use super::h1_head::content_kind;
use super::record::{Outcome, RequestRecord};
use super::response::Reading;
use super::source::PreparedRequest;
use super::target::Endpoint;
use crate::api::SseDecoder;

/// The environment variable that picks hyper for plain `http://` endpoints.
pub const CLIENT_ENV: &str = "PERFPLAN_HTTP1_CLIENT";

/// Largest response head accepted (as the lean client's).
const MAX_HEAD: usize = 64 * 1024;
/// An idle connection is checked for a close by the server before reuse once it has
/// been idle this long (as the lean client's).
const PROBE_AFTER: Duration = Duration::from_millis(100);

/// Whether this process sends plain `http://` load through hyper (`PERFPLAN_HTTP1_CLIENT=hyper`).
pub(crate) fn chosen() -> bool {
    std::env::var(CLIENT_ENV).is_ok_and(|v| v.eq_ignore_ascii_case("hyper"))
}

/// When a connection's last read returned and how many bytes it has read in all.
#[derive(Debug)]
struct Stamps {
    epoch: Instant,
    last_read_ns: AtomicU64,
    bytes: AtomicU64,
}

impl Stamps {
    fn last_read(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.last_read_ns.load(Relaxed))
    }

    fn bytes(&self) -> u64 {
        self.bytes.load(Relaxed)
    }
}

/// The socket, stamping every read that returned bytes.
struct Stamped {
    stream: TcpStream,
    stamps: Arc<Stamps>,
}

impl AsyncRead for Stamped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            let since = this.stamps.epoch.elapsed().as_nanos();
            let since = u64::try_from(since).unwrap_or(u64::MAX);
            this.stamps.last_read_ns.store(since, Relaxed);
            this.stamps.bytes.fetch_add(n as u64, Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Stamped {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

type Driver = Connection<hyper_util::rt::TokioIo<Stamped>, Full<Bytes>>;

/// One keep-alive connection: hyper's sender and its connection state machine.
pub(crate) struct HyperConn {
    sender: SendRequest<Full<Bytes>>,
    /// `None` once the connection has ended.
    driver: Option<Pin<Box<Driver>>>,
    stamps: Arc<Stamps>,
    sse: SseDecoder,
    /// Was idle in the pool (see the lean client's `Conn::reused`).
    reused: bool,
    /// How long the TCP connect took.
    pub(crate) setup: Duration,
}

/// Polls `fut` to its end while driving the connection `driver` beside it.
async fn drive<F: Future>(driver: &mut Option<Pin<Box<Driver>>>, fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        if let Some(d) = driver.as_mut() {
            if d.as_mut().poll(cx).is_ready() {
                *driver = None;
            }
        }
        fut.as_mut().poll(cx)
    })
    .await
}

impl HyperConn {
    /// An idle connection is still usable: polled once (no waiting), hyper has seen
    /// neither its close nor stray bytes, and it takes a request.
    fn idle_and_open(&mut self) -> bool {
        let Some(d) = self.driver.as_mut() else {
            return false;
        };
        if d.as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready()
        {
            self.driver = None;
            return false;
        }
        self.sender.is_ready()
    }

    async fn send(
        &mut self,
        req: http::Request<Full<Bytes>>,
    ) -> hyper::Result<http::Response<Incoming>> {
        let HyperConn { sender, driver, .. } = self;
        drive(driver, sender.ready()).await?;
        drive(driver, sender.send_request(req)).await
    }
}

/// One endpoint's hyper connections and request headers.
pub(crate) struct HyperClient {
    addrs: Vec<SocketAddr>,
    headers: HeaderMap,
    idle: Mutex<Vec<HyperConn>>,
    max_idle: usize,
    connect_timeout: Duration,
}

impl std::fmt::Debug for HyperClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperClient")
            .field("addrs", &self.addrs)
            .finish_non_exhaustive()
    }
}

/// A header the endpoint checked already, or a trace's recorded one that is not valid.
fn header(name: &str, value: &str) -> Option<(HeaderName, HeaderValue)> {
    let n = HeaderName::from_bytes(name.as_bytes()).ok()?;
    Some((n, HeaderValue::from_str(value).ok()?))
}

impl HyperClient {
    /// `headers` as for the lean client (`Host`, content type, key, custom ones).
    pub(crate) fn new(
        addrs: Vec<SocketAddr>,
        headers: &[(String, String)],
        max_idle: usize,
        connect_timeout: Duration,
    ) -> HyperClient {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            if let Some((n, mut v)) = header(name, value) {
                v.set_sensitive(crate::secrets::is_secret_header(name));
                map.append(n, v);
            }
        }
        HyperClient {
            addrs,
            headers: map,
            idle: Mutex::new(Vec::new()),
            max_idle,
            connect_timeout,
        }
    }

    /// An idle connection the server has not closed meanwhile, or a new one.
    async fn checkout(&self) -> io::Result<HyperConn> {
        loop {
            let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
            let Some(mut c) = idle else {
                return self.connect().await;
            };
            if c.stamps.last_read().elapsed() < PROBE_AFTER || c.idle_and_open() {
                return Ok(c);
            }
        }
    }

    /// Opens a new connection (trying each address in turn), timing its TCP connect.
    pub(crate) async fn connect(&self) -> io::Result<HyperConn> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
        let began = Instant::now();
        for addr in &self.addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    let setup = began.elapsed();
                    stream.set_nodelay(true)?;
                    return handshake(stream, setup).await;
                }
                Ok(Err(e)) => last = e,
                Err(_) => last = io::Error::new(io::ErrorKind::TimedOut, "connect timeout"),
            }
        }
        Err(last)
    }

    pub(crate) fn pools(&self) -> bool {
        self.max_idle > 0
    }

    fn idle_count(&self) -> usize {
        self.idle.lock().map_or(0, |v| v.len())
    }

    /// Returns a connection to the pool if hyper will take another request on it.
    fn checkin(&self, mut conn: HyperConn) {
        conn.reused = true;
        if !conn.idle_and_open() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.max_idle {
                idle.push(conn);
            }
        }
    }

    /// `POST target` of `req` with the endpoint's headers, the request's own and an
    /// `x-request-id` when `id` is set.
    fn request(
        &self,
        target: &str,
        req: &PreparedRequest,
        id: Option<&str>,
    ) -> Result<http::Request<Full<Bytes>>, Failure> {
        let mut headers = self.headers.clone();
        for (name, value) in &req.headers {
            let (n, v) = header(name, value).ok_or_else(|| {
                Failure::new(Outcome::Connect, format!("invalid request header `{name}`"))
            })?;
            headers.insert(n, v);
        }
        if let Some(id) = id.and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.insert("x-request-id", id);
        }
        let mut request = http::Request::post(target)
            .body(Full::new(req.body.clone()))
            .map_err(|e| Failure::new(Outcome::Connect, format!("request target: {e}")))?;
        *request.headers_mut() = headers;
        Ok(request)
    }
}

async fn handshake(stream: TcpStream, setup: Duration) -> io::Result<HyperConn> {
    let stamps = Arc::new(Stamps {
        epoch: Instant::now(),
        last_read_ns: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    let io = hyper_util::rt::TokioIo::new(Stamped {
        stream,
        stamps: stamps.clone(),
    });
    let (sender, driver) = http1::Builder::new()
        .max_header_size(MAX_HEAD)
        .handshake(io)
        .await
        .map_err(io::Error::other)?;
    Ok(HyperConn {
        sender,
        driver: Some(Box::pin(driver)),
        stamps,
        sse: SseDecoder::new(),
        reused: false,
        setup,
    })
}

impl super::preconnect::Pool for HyperClient {
    type Conn = HyperConn;

    fn prune_idle(&self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.retain_mut(HyperConn::idle_and_open);
        }
    }

    fn idle_count(&self) -> usize {
        HyperClient::idle_count(self)
    }

    fn idle_room(&self) -> usize {
        self.max_idle.saturating_sub(self.idle_count())
    }

    fn connect(&self) -> impl Future<Output = io::Result<HyperConn>> {
        HyperClient::connect(self)
    }

    fn setup(conn: &HyperConn) -> Duration {
        conn.setup
    }

    fn checkin(&self, conn: HyperConn) {
        HyperClient::checkin(self, conn);
    }
}

/// The error and its causes, as one line.
fn chain(e: &hyper::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    super::exchange::excerpt(text.as_bytes())
}

/// The first `std::io::Error` among `e`'s causes.
fn io_cause(e: &hyper::Error) -> Option<&io::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

/// The lean client's rule (`exchange::body_failure`): framing that cannot be parsed is
/// `bad_body`; a connection that ended or broke before the body did is `stream_broken`.
fn body_failure(e: &hyper::Error) -> Outcome {
    match io_cause(e).map(io::Error::kind) {
        Some(io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput) => Outcome::BadBody,
        _ if e.is_parse() => Outcome::BadBody,
        _ => Outcome::StreamBroken,
    }
}

/// Takes a connection, sends, and waits for the response head; `rec.sent` and
/// `rec.connect` as in `exchange::open_h1`, with its retry of a pooled connection closed
/// before any answer byte.
async fn open(
    hc: &HyperClient,
    target: &str,
    req: &PreparedRequest,
    id: Option<&str>,
    rec: &mut RequestRecord,
    t0: Instant,
) -> Result<(HyperConn, http::Response<Incoming>), Failure> {
    let mut conn = hc.checkout().await.map_err(connect_failure)?;
    loop {
        let request = hc.request(target, req, id)?;
        let reused = conn.reused;
        rec.connect = (!reused).then_some(conn.setup);
        let before = conn.stamps.bytes();
        rec.sent = Instant::now() - t0;
        let result = conn.send(request).await;
        let answered = conn.stamps.bytes() > before;
        match result {
            Ok(response) => return Ok((conn, response)),
            Err(e) if e.is_parse() => return Err(Failure::new(Outcome::BadBody, chain(&e))),
            Err(_) if reused && !answered => {
                conn = hc.connect().await.map_err(connect_failure)?;
            }
            Err(e) if answered => return Err(Failure::new(Outcome::StreamBroken, chain(&e))),
            Err(e) if e.is_incomplete_message() => {
                return Err(Failure::new(
                    Outcome::Connect,
                    "connection closed before the response",
                ))
            }
            Err(e) => {
                let why = format!("before the response: {}", chain(&e));
                return Err(Failure::new(Outcome::Connect, why));
            }
        }
    }
}

/// One exchange over hyper: the lean client's `drive_h1`, frame by frame.
pub(crate) async fn drive_hyper(
    hc: &HyperClient,
    ep: &Endpoint,
    req: &PreparedRequest,
    rec: &mut RequestRecord,
    t0: Instant,
    sent_at: Instant,
) -> Result<(), Failure> {
    let sleep = tokio::time::sleep_until(deadline(ep, sent_at, sent_at).into());
    tokio::pin!(sleep);
    let id = ep
        .request_ids
        .as_ref()
        .map(|(p, first)| super::request_id::request_id(p, first + rec.index));
    let target = crate::control::request_target(ep.url(req.kind));
    let opened = open(hc, target, req, id.as_deref(), rec, t0);
    let (mut conn, response) = until_head(opened, sleep.as_mut(), ep, sent_at).await?;
    let (head, mut body) = response.into_parts();
    let status = head.status.as_u16();
    rec.http_status = Some(status);
    let (event_stream, json) = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map_or((false, false), content_kind);
    let streamed = status == 200 && (event_stream || (req.stream && !json));
    // Both framings at once is suspect (RFC 9112 6.3): not reused, as in the lean client.
    let suspect =
        head.headers.contains_key(CONTENT_LENGTH) && head.headers.contains_key(TRANSFER_ENCODING);
    let decoder = std::mem::take(&mut conn.sse);
    let mut reading = Reading::new((status, streamed), req, ep, t0, decoder);
    rec.end = reading.last - t0;
    let stamps = conn.stamps.clone();
    let mut ended = false;
    loop {
        let frame = drive(&mut conn.driver, body.frame());
        tokio::select! {
            biased;
            f = frame => match f {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        reading.on_data(rec, &data, stamps.last_read());
                        if reading.broken() {
                            break;
                        }
                    }
                }
                None => {
                    ended = true;
                    break;
                }
                Some(Err(e)) => return Err(Failure::new(body_failure(&e), chain(&e))),
            },
            () = &mut sleep => {
                if let Some(f) = timed_out(ep, sent_at, reading.last, Instant::now()) {
                    return Err(f);
                }
                sleep.as_mut().reset(deadline(ep, sent_at, reading.last).into());
            }
        }
    }
    reading.finish(rec);
    if ended && !suspect {
        conn.sse = std::mem::take(&mut reading.decoder);
        hc.checkin(conn);
    }
    reading.conclude(rec)
}
