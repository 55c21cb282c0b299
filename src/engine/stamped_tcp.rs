//! The lean client's TCP stream with the kernel's receive stamps (`rx_stamp`): every read
//! notes when the kernel received the bytes it returned, so the answer's times are
//! when its bytes arrived, not when the client's runtime got round to reading them (the
//! difference is the client's own delay). Where the kernel gives no stamp (not Linux,
//! stamping refused, or the first moment after it was turned on) a read notes none and
//! the read's own time is used.
//!
//! What a stamp can say: segments that wait unread in a socket are merged by the kernel,
//! and the merged data keeps the newest one's stamp. A client that comes to a socket later
//! than the next chunk's arrival dates the first chunk at that next one's arrival: the
//! error is bounded by the gap to the next chunk (an ITL), not by how late the client was.
//! (Reading one event at a time does not help: measured, the merge happens before the
//! read.) Knows nothing about HTTP.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A connected TCP stream whose reads are stamped by the kernel where it can.
pub(crate) struct StampedTcp {
    tcp: TcpStream,
    /// The kernel stamps this socket's received data.
    kernel: bool,
    cmsg: Vec<u8>,
    /// The kernel's stamp of the last read's bytes (`None`: the read had none).
    last: Option<SystemTime>,
}

/// When the bytes of a read arrived: the kernel's time as an `Instant`, and how long
/// before the read that was (zero without a kernel stamp).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    pub(crate) at: Instant,
    pub(crate) delay: Duration,
    /// The kernel stamped the bytes (else `at` is the read's own time).
    pub(crate) kernel: bool,
}

impl Arrival {
    /// The arrival of bytes read just now, with the kernel's `stamp` if there is one.
    pub(crate) fn of(stamp: Option<SystemTime>) -> Arrival {
        let now = Instant::now();
        let delay = stamp.map(crate::rx_stamp::age).unwrap_or_default();
        Arrival {
            at: now.checked_sub(delay).unwrap_or(now),
            delay,
            kernel: stamp.is_some(),
        }
    }
}

impl StampedTcp {
    /// Asks the kernel to stamp the socket's received data (`receive_stamps`), and keeps
    /// whether it agreed.
    pub(crate) fn new(tcp: TcpStream, receive_stamps: bool) -> StampedTcp {
        let kernel = receive_stamps && crate::rx_stamp::enable(&tcp);
        StampedTcp {
            tcp,
            kernel,
            cmsg: if kernel {
                crate::rx_stamp::buffer()
            } else {
                Vec::new()
            },
            last: None,
        }
    }

    /// The kernel's stamp of the last read's bytes.
    pub(crate) fn stamp(&self) -> Option<SystemTime> {
        self.last
    }

    /// The socket, for a non-blocking probe of an idle connection.
    pub(crate) fn tcp(&self) -> &TcpStream {
        &self.tcp
    }
}

impl AsyncRead for StampedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.kernel {
            this.last = None;
            return Pin::new(&mut this.tcp).poll_read(cx, buf);
        }
        loop {
            std::task::ready!(this.tcp.poll_read_ready(cx))?;
            let (tcp, cmsg) = (&this.tcp, &mut this.cmsg);
            let dst = buf.initialize_unfilled();
            match tcp.try_io(tokio::io::Interest::READABLE, || {
                crate::rx_stamp::recv(tcp, dst, cmsg)
            }) {
                Ok((n, stamp)) => {
                    buf.advance(n);
                    this.last = stamp;
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for StampedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, data)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
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
    use tokio::net::TcpListener;

    /// A reader delayed on purpose: the kernel's time of the bytes lies before the read's
    /// own time by the delay.
    #[tokio::test]
    async fn a_delayed_read_is_stamped_when_the_bytes_arrived() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The first socket that asks turns stamping on system-wide a moment later.
        let first = StampedTcp::new(TcpStream::connect(addr).await.unwrap(), true);
        let _first_peer = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut client = StampedTcp::new(TcpStream::connect(addr).await.unwrap(), true);
        let (mut server, _) = listener.accept().await.unwrap();
        if !first.kernel {
            eprintln!("skipped: this kernel refuses SO_TIMESTAMPNS");
            return;
        }
        server.write_all(b"data: first\n\n").await.unwrap();
        let written = Instant::now();
        tokio::time::sleep(Duration::from_millis(80)).await;
        let mut buf = [0u8; 64];
        let n = client.read(&mut buf).await.unwrap();
        let arrival = Arrival::of(client.stamp());
        assert_eq!(&buf[..n], b"data: first\n\n");
        assert!(arrival.kernel);
        assert!(arrival.delay >= Duration::from_millis(75), "{arrival:?}");
        let off = arrival.at.saturating_duration_since(written)
            + written.saturating_duration_since(arrival.at);
        assert!(
            off < Duration::from_millis(5),
            "stamped {off:?} from the write"
        );
    }

    /// Without stamps (asked for none), a read is timed when it returns.
    #[tokio::test]
    async fn without_stamps_a_read_is_timed_when_it_returns() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = StampedTcp::new(TcpStream::connect(addr).await.unwrap(), false);
        let (mut server, _) = listener.accept().await.unwrap();
        server.write_all(b"x").await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut buf = [0u8; 8];
        assert_eq!(client.read(&mut buf).await.unwrap(), 1);
        let arrival = Arrival::of(client.stamp());
        assert!(!arrival.kernel);
        assert_eq!(arrival.delay, Duration::ZERO);
    }
}
