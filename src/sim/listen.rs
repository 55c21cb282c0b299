//! The simulator's listener: plain HTTP, or HTTPS (`perfplan sim --tls-cert --tls-key`,
//! `SimServer::start_tls`) with rustls, ALPN `http/1.1` and session resumption offered
//! (stateful TLS 1.3 tickets and TLS 1.2 session ids, as common servers do). Either way
//! every connection stamps its requests' arrivals (`rx_stamp`: the kernel's receive
//! timestamp of the TLS record that carried the request's first bytes). Handshakes run
//! in tasks of their own, so a slow or refused one holds up no other connection. Knows
//! nothing about routes.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::rx_stamp::{RxInfo, StampedListener, StampedStream};
use crate::either_io::EitherIo;

/// Longest TLS handshake the simulator waits for.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS sessions the simulator remembers for resumption.
const SESSIONS: usize = 16_384;

/// Why the simulator's TLS settings could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SimTlsError {
    #[error("cannot read {what} {}", path.display())]
    Read {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{what} {} holds no usable PEM {what}", path.display())]
    Pem {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("the certificate and key do not make a TLS server identity")]
    Identity(#[source] rustls::Error),
}

/// The server configuration of a certificate chain and its key (PEM files): ALPN
/// `http/1.1`, session resumption offered.
pub fn tls_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, SimTlsError> {
    let read = |what, path: &Path| {
        std::fs::read(path).map_err(|source| SimTlsError::Read {
            what,
            path: path.to_path_buf(),
            source,
        })
    };
    let pem = |what, path: &Path, source| SimTlsError::Pem {
        what,
        path: path.to_path_buf(),
        source,
    };
    let certs = CertificateDer::pem_slice_iter(&read("certificate", cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem("certificate", cert, e))?;
    let key = PrivateKeyDer::from_pem_slice(&read("key", key)?).map_err(|e| pem("key", key, e))?;
    server_config(certs, key)
}

/// The server configuration of `certs` (the server's own first) and `key`.
pub fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, SimTlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(SimTlsError::Identity)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(SimTlsError::Identity)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSIONS);
    Ok(config)
}

/// One accepted connection, plain or TLS.
pub(crate) type SimIo = EitherIo<StampedStream, Box<TlsStream<StampedStream>>>;

impl SimIo {
    fn stamped(&self) -> &StampedStream {
        match self {
            EitherIo::Plain(s) => s,
            EitherIo::Tls(s) => s.get_ref().0,
        }
    }
}

/// The simulator's listener (see the module).
pub(crate) enum SimListener {
    Plain(StampedListener),
    Tls {
        ready: mpsc::Receiver<(SimIo, SocketAddr)>,
        local: SocketAddr,
        accepting: JoinHandle<()>,
    },
}

impl SimListener {
    /// Serves `listener` over TLS with `config` when given, plainly otherwise.
    pub(crate) fn new(listener: TcpListener, config: Option<Arc<rustls::ServerConfig>>) -> Self {
        let Some(config) = config else {
            return SimListener::Plain(StampedListener(listener));
        };
        let local = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)));
        let (tx, ready) = mpsc::channel(1024);
        let acceptor = TlsAcceptor::from(config);
        let accepting = tokio::spawn(async move {
            let mut plain = StampedListener(listener);
            loop {
                let (tcp, addr) = plain.accept().await;
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let shake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
                    // A refused or abandoned handshake is the client's to report.
                    if let Ok(Ok(tls)) = shake.await {
                        let _ = tx.send((EitherIo::Tls(Box::new(tls)), addr)).await;
                    }
                });
            }
        });
        SimListener::Tls {
            ready,
            local,
            accepting,
        }
    }
}

impl Drop for SimListener {
    fn drop(&mut self) {
        if let SimListener::Tls { accepting, .. } = self {
            accepting.abort();
        }
    }
}

impl Listener for SimListener {
    type Io = SimIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self {
            SimListener::Plain(l) => {
                let (io, addr) = l.accept().await;
                (EitherIo::Plain(io), addr)
            }
            SimListener::Tls { ready, .. } => match ready.recv().await {
                Some(next) => next,
                // The accepting task ended (it never does on its own): accept no more.
                None => std::future::pending().await,
            },
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        match self {
            SimListener::Plain(l) => l.local_addr(),
            SimListener::Tls { local, .. } => Ok(*local),
        }
    }
}

impl Connected<IncomingStream<'_, SimListener>> for RxInfo {
    fn connect_info(stream: IncomingStream<'_, SimListener>) -> Self {
        RxInfo::of(stream.io().stamped())
    }
}
