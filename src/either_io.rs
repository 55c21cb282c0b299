//! A byte stream of one of two kinds, read and written alike: a plain one or the TLS one
//! over it. The one delegation the lean client's connections (`engine::h1_wire`) and the
//! simulator's (`sim::listen`) share. A leaf: it imports nothing of the crate.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A plain stream, or the TLS stream over one.
pub(crate) enum EitherIo<P, T> {
    Plain(P),
    Tls(T),
}

impl<P, T> EitherIo<P, T> {
    /// A TLS stream.
    pub(crate) fn is_tls(&self) -> bool {
        matches!(self, EitherIo::Tls(_))
    }
}

impl<P: AsyncRead + Unpin, T: AsyncRead + Unpin> AsyncRead for EitherIo<P, T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            EitherIo::Plain(s) => Pin::new(s).poll_read(cx, buf),
            EitherIo::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl<P: AsyncWrite + Unpin, T: AsyncWrite + Unpin> AsyncWrite for EitherIo<P, T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            EitherIo::Plain(s) => Pin::new(s).poll_write(cx, data),
            EitherIo::Tls(s) => Pin::new(s).poll_write(cx, data),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            EitherIo::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            EitherIo::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            EitherIo::Plain(s) => s.is_write_vectored(),
            EitherIo::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            EitherIo::Plain(s) => Pin::new(s).poll_flush(cx),
            EitherIo::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            EitherIo::Plain(s) => Pin::new(s).poll_shutdown(cx),
            EitherIo::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
