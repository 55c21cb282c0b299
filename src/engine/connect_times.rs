//! Connection setup times on the reqwest path. reqwest's pool opens connections out of
//! sight of the request that needs one, so a connector layer ([`TimeConnects`]) times every
//! connect (DNS, TCP and TLS: the whole of reqwest's connector) and files it under the
//! connection's local address; the first response that arrives over that connection
//! (`HttpInfo` in its extensions) takes it. Knows nothing about requests or records.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use hyper_util::client::legacy::connect::{Connection, HttpInfo};

/// Connections set up and not yet claimed by a response, above which the oldest are
/// forgotten (connections that failed before answering leave their entry behind).
const MAX_PENDING: usize = 65_536;

/// When one connection's setup began and ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Setup {
    pub began: Instant,
    pub ended: Instant,
}

/// New connections by local address, until a response claims them. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConnectTimes(Arc<Mutex<HashMap<SocketAddr, Setup>>>);

impl ConnectTimes {
    fn insert(&self, local: SocketAddr, setup: Setup) {
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= MAX_PENDING {
                let cutoff = setup.began;
                map.retain(|_, s| s.ended >= cutoff);
                if map.len() >= MAX_PENDING {
                    map.clear();
                }
            }
            map.insert(local, setup);
        }
    }

    /// The setup of the connection that carried `response`, if it is new (the first
    /// response on a connection claims it; later ones find nothing).
    pub(crate) fn claim(&self, response: &reqwest::Response) -> Option<Setup> {
        let local = response.extensions().get::<HttpInfo>()?.local_addr();
        self.0.lock().ok()?.remove(&local)
    }
}

/// The connector layer that times reqwest's connects (`ClientBuilder::connector_layer`).
#[derive(Debug, Clone)]
pub(crate) struct TimeConnects(pub ConnectTimes);

impl<S> tower_layer::Layer<S> for TimeConnects {
    type Service = Timed<S>;

    fn layer(&self, inner: S) -> Timed<S> {
        Timed {
            inner,
            times: self.0.clone(),
        }
    }
}

/// reqwest's connector with each connect timed.
#[derive(Debug, Clone)]
pub(crate) struct Timed<S> {
    inner: S,
    times: ConnectTimes,
}

type Connecting<C, E> = Pin<Box<dyn Future<Output = Result<C, E>> + Send>>;

impl<S, R> tower_service::Service<R> for Timed<S>
where
    S: tower_service::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Connecting<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let began = Instant::now();
        let connecting = self.inner.call(request);
        let times = self.times.clone();
        Box::pin(async move {
            let conn = connecting.await?;
            let ended = Instant::now();
            let mut extras = http::Extensions::new();
            conn.connected().get_extras(&mut extras);
            if let Some(info) = extras.get::<HttpInfo>() {
                times.insert(info.local_addr(), Setup { began, ended });
            }
            Ok(conn)
        })
    }
}
