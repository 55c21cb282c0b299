//! The kernel's receive timestamps of a TCP socket (`SO_TIMESTAMPNS`, read with
//! `recvmsg`): when the bytes a read returns arrived, not when the reader got round to
//! them. For TCP the stamp of one read is that of the last segment it took, so the
//! bytes of one read arrived at that time or before. The one place both sides use it:
//! the simulator (when a request arrived) and the lean client (when an answer's bytes
//! arrived). Elsewhere than Linux, or where the kernel refuses, there is no stamp.
//! A leaf: it imports nothing of the crate.

pub use imp::{buffer, enable, recv};

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::SystemTime;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::AsRawFd;
    use std::time::{Duration, SystemTime};

    use nix::sys::socket::{
        recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
    };
    use nix::sys::time::TimeSpec;
    use tokio::net::TcpStream;

    /// Asks the kernel to stamp received data; false if it refuses.
    pub fn enable(tcp: &TcpStream) -> bool {
        setsockopt(tcp, sockopt::ReceiveTimestampns, &true).is_ok()
    }

    pub fn buffer() -> Vec<u8> {
        nix::cmsg_space!(TimeSpec)
    }

    /// One `recvmsg` into `dst`: the byte count and the kernel's timestamp of the data.
    pub fn recv(
        tcp: &TcpStream,
        dst: &mut [u8],
        cmsg: &mut [u8],
    ) -> io::Result<(usize, Option<SystemTime>)> {
        let mut iov = [io::IoSliceMut::new(dst)];
        let msg = recvmsg::<SockaddrStorage>(
            tcp.as_raw_fd(),
            &mut iov,
            Some(cmsg),
            MsgFlags::MSG_DONTWAIT,
        )
        .map_err(io::Error::from)?;
        let stamp = msg.cmsgs().ok().and_then(|mut all| {
            all.find_map(|c| match c {
                ControlMessageOwned::ScmTimestampns(ts) => to_system_time(ts),
                _ => None,
            })
        });
        Ok((msg.bytes, stamp))
    }

    /// The stamp as a time; `None` for a zero stamp (the kernel turns stamping on
    /// system-wide a moment after the first socket asks, and leaves earlier data unstamped).
    fn to_system_time(ts: TimeSpec) -> Option<SystemTime> {
        if ts.tv_sec() == 0 && ts.tv_nsec() == 0 {
            return None;
        }
        let secs = u64::try_from(ts.tv_sec()).ok()?;
        let nanos = u32::try_from(ts.tv_nsec()).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::time::SystemTime;

    use tokio::net::TcpStream;

    pub fn enable(_: &TcpStream) -> bool {
        false
    }

    pub fn buffer() -> Vec<u8> {
        Vec::new()
    }

    pub fn recv(
        _: &TcpStream,
        _: &mut [u8],
        _: &mut [u8],
    ) -> io::Result<(usize, Option<SystemTime>)> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// How long ago the kernel stamped data (zero for a stamp in the future: a clock step).
pub fn age(stamp: std::time::SystemTime) -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(stamp)
        .unwrap_or_default()
}

/// A connected TCP stream whose reads are stamped by the kernel where it can: the lean
/// client's connections and the simulator's.
pub struct StampedTcp {
    tcp: TcpStream,
    /// The kernel stamps this socket's received data.
    kernel: bool,
    cmsg: Vec<u8>,
    /// The kernel's stamp of the last read's bytes (`None`: the read had none).
    last: Option<SystemTime>,
}

impl StampedTcp {
    /// Asks the kernel to stamp the socket's received data (`receive_stamps`), and keeps
    /// whether it agreed.
    pub fn new(tcp: TcpStream, receive_stamps: bool) -> StampedTcp {
        let kernel = receive_stamps && enable(&tcp);
        StampedTcp {
            tcp,
            kernel,
            cmsg: if kernel { buffer() } else { Vec::new() },
            last: None,
        }
    }

    /// The kernel's stamp of the last read's bytes.
    pub fn stamp(&self) -> Option<SystemTime> {
        self.last
    }

    /// The kernel stamps this socket's received data.
    pub fn kernel(&self) -> bool {
        self.kernel
    }

    /// The socket, for a non-blocking probe of an idle connection.
    pub fn tcp(&self) -> &TcpStream {
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
            match tcp.try_io(tokio::io::Interest::READABLE, || recv(tcp, dst, cmsg)) {
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
