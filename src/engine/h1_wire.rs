//! The wire under the lean HTTP/1.1 client: a plain TCP stream (`http://`) or a TLS one
//! (`https://`, rustls through tokio-rustls), read and written alike (`EitherIo`); the TLS handshake of
//! a new connection, timed, with whether the server resumed an earlier session; and the
//! check of an idle connection for a close by the server. Knows nothing about HTTP.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Instant;

use super::stamped_tcp::{Arrival, StampedTcp};
use rustls::pki_types::ServerName;
use rustls::HandshakeKind;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::either_io::EitherIo;
use crate::record::TlsHandshake;

/// One connection's byte stream: plain TCP, or TLS over it, either with the kernel's
/// receive stamps where it gives them.
pub(crate) type Wire = EitherIo<StampedTcp, Box<TlsStream<StampedTcp>>>;

impl Wire {
    /// An idle connection is still usable: neither a close nor stray bytes have arrived.
    /// Plain: one non-blocking read, no system call unless the socket became readable.
    /// TLS: the TLS stream polled once, so that session tickets the server sent after the
    /// handshake are taken in (and kept for resumption) and only a close or application
    /// data says no.
    pub(crate) fn idle_and_open(&mut self) -> bool {
        let mut probe = [0u8; 1];
        match self {
            EitherIo::Plain(tcp) => {
                matches!(tcp.tcp().try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            }
            EitherIo::Tls(tls) => {
                let mut buf = ReadBuf::new(&mut probe);
                let mut cx = Context::from_waker(Waker::noop());
                Pin::new(&mut **tls)
                    .poll_read(&mut cx, &mut buf)
                    .is_pending()
            }
        }
    }

    /// When the bytes of the last read arrived (for TLS: the last TCP read under it,
    /// which brought them or came after them).
    pub(crate) fn arrival(&self) -> Arrival {
        Arrival::of(match self {
            EitherIo::Plain(tcp) => tcp.stamp(),
            EitherIo::Tls(tls) => tls.get_ref().0.stamp(),
        })
    }
}

/// How an endpoint's connections become TLS ones: its rustls configuration (the
/// endpoint's `tls` settings, ALPN `http/1.1`, its session store) and the server name the
/// certificate must hold.
#[derive(Clone)]
pub(crate) struct TlsDial {
    connector: TlsConnector,
    name: ServerName<'static>,
}

impl std::fmt::Debug for TlsDial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsDial")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl TlsDial {
    /// For a server reached as `host` (a DNS name or an IP address, brackets removed);
    /// `None` when `host` is neither.
    pub(crate) fn new(config: rustls::ClientConfig, host: &str) -> Option<TlsDial> {
        let name = ServerName::try_from(host.to_string()).ok()?;
        Some(TlsDial {
            connector: TlsConnector::from(Arc::new(config)),
            name,
        })
    }

    /// The TLS handshake over an established TCP connection. A refused certificate is an
    /// `io::Error` holding the rustls error (`control::tls_problem` tells it in words).
    pub(crate) async fn handshake(&self, tcp: StampedTcp) -> io::Result<(Wire, TlsHandshake)> {
        let began = Instant::now();
        let tls = self.connector.connect(self.name.clone(), tcp).await?;
        let took = began.elapsed();
        let resumed = tls.get_ref().1.handshake_kind() == Some(HandshakeKind::Resumed);
        Ok((EitherIo::Tls(Box::new(tls)), TlsHandshake { took, resumed }))
    }
}
