//! When a request reached the simulator: the kernel's receive timestamp of its first bytes
//! (`SO_TIMESTAMPNS`, read with `recvmsg`), not the moment the simulator's runtime got round
//! to it. With hundreds of streams emitting chunks in the same instant the runtime may take
//! a millisecond to read a new request; stamping then would count the simulator's own
//! queueing as the client's TTFT error. Where the kernel gives no timestamp (not Linux, or
//! the option is refused) the first read's own time is used.
//!
//! A connection carries one request at a time (HTTP/1.1, no pipelining from clients that
//! wait for answers): the first bytes read after the previous answer was written start the
//! next request. Knows nothing about routes or truth records.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::rx_stamp::StampedTcp;

/// The arrival of the request a connection is carrying.
#[derive(Debug, Default)]
pub(crate) struct RxClock {
    state: Mutex<RxState>,
}

#[derive(Debug, Default)]
struct RxState {
    arrival: Option<SystemTime>,
    wrote: bool,
}

impl RxClock {
    fn on_read(&self, at: SystemTime) {
        if let Ok(mut s) = self.state.lock() {
            if s.wrote || s.arrival.is_none() {
                s.arrival = Some(at);
                s.wrote = false;
            }
        }
    }

    fn on_write(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.wrote = true;
        }
    }

    /// The current request's arrival as an `Instant` (now, if nothing was stamped).
    pub(crate) fn arrival(&self) -> Instant {
        let stamped = self.state.lock().ok().and_then(|s| s.arrival);
        let now = Instant::now();
        let age = stamped.map(crate::rx_stamp::age).unwrap_or(Duration::ZERO);
        now.checked_sub(age).unwrap_or(now)
    }
}

/// The connection's clock, handed to handlers as `ConnectInfo<RxInfo>`.
#[derive(Debug, Clone)]
pub(crate) struct RxInfo(Arc<RxClock>);

impl RxInfo {
    /// The clock of the connection `stream` (under TLS or not).
    pub(crate) fn of(stream: &StampedStream) -> RxInfo {
        RxInfo(stream.clock.clone())
    }

    /// The arrival of the request the connection is carrying (see `RxClock::arrival`).
    pub(crate) fn arrival(&self) -> Instant {
        self.0.arrival()
    }
}

/// A TCP listener whose connections stamp request arrivals (and send without Nagle delay).
pub(crate) struct StampedListener(pub TcpListener);

impl Listener for StampedListener {
    type Io = StampedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((tcp, addr)) => return (StampedStream::new(tcp), addr),
                // Out of descriptors or an aborted handshake: wait a little and go on, as
                // axum's own listener does.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// One accepted connection.
pub(crate) struct StampedStream {
    tcp: StampedTcp,
    clock: Arc<RxClock>,
}

impl StampedStream {
    fn new(tcp: TcpStream) -> StampedStream {
        let _ = tcp.set_nodelay(true);
        StampedStream {
            tcp: StampedTcp::new(tcp, true),
            clock: Arc::default(),
        }
    }
}

impl AsyncRead for StampedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.tcp).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let at = this.tcp.stamp().unwrap_or_else(SystemTime::now);
            this.clock.on_read(at);
        }
        polled
    }
}

impl AsyncWrite for StampedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.clock.on_write();
        Pin::new(&mut this.tcp).poll_write(cx, data)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.clock.on_write();
        Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_kernel_stamps_bytes_when_they_arrive_not_when_they_are_read() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut listener = StampedListener(listener);
        // The first socket that asks turns stamping on system-wide a moment later (in the
        // kernel's deferred work): keep one such socket open and give it that moment.
        let _first = TcpStream::connect(addr).await.unwrap();
        let (_first_server, _) = listener.accept().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await;
        if !server.tcp.kernel() {
            eprintln!("skipped: this kernel refuses SO_TIMESTAMPNS (reads stamp arrivals)");
            return;
        }
        client.write_all(b"first request").await.unwrap();
        tokio::time::sleep(Duration::from_millis(80)).await;
        let mut buf = [0u8; 64];
        let n = server.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"first request");
        let age = server.clock.arrival().elapsed();
        assert!(age >= Duration::from_millis(70), "stamped {age:?} ago");
        // The answer, then the next request: a new arrival.
        server.write_all(b"answer").await.unwrap();
        client.write_all(b"next").await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let _ = server.read(&mut buf).await.unwrap();
        assert!(server.clock.arrival().elapsed() < Duration::from_millis(60));
    }
}
