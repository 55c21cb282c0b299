//! The built-in OpenAI-compatible simulator: `perfplan sim`, `sim://NAME` endpoints started
//! in-process, and `SimServer::start` for tests. It knows nothing about plans or the engine.
//!
//! Routes (under `mount` when set, e.g. `/gateway/openai/v1/models`): `POST /v1/chat/completions`, `/v1/completions` (text, token ids, or a list of
//! either), `/v1/responses`, `/v1/embeddings`, `/v1/rerank` (also `/rerank`, `/v2/rerank`);
//! `GET /v1/models`, `/health`, `/version` (as vLLM), `/metrics` (Prometheus, vLLM names); `POST
//! /reset_prefix_cache`; `GET /sim/truth` (`?reset=true`) and `DELETE /sim/truth`.
//!
//! Streams follow vLLM/OpenAI SSE: for chat a role chunk first (written with the first
//! content chunk, as vLLM does), `tokens_per_chunk` tokens per chunk, `finish_reason` on the
//! last content chunk, then a usage chunk (`choices: []`) per `UsageMode`, then
//! `data: [DONE]`. Responses API streams send typed events and end with `response.completed`.
//!
//! HTTPS (`perfplan sim --tls-cert --tls-key`, `SimServer::start_tls`): see `listen`.
//!
//! With `workers` above 1 one URL fronts that many workers (see `front`), each its own
//! `SimState`; `/metrics` then labels each worker's series `engine="K"`.
//!
//! Token counting (see `tokens`), the timing model (see `generate`), the prefix cache (see
//! `cache`), faults (see `faults`) and the ground-truth JSON (see `truth`) are documented in
//! their modules. Embeddings and rerank take `ttft_base` plus prefill time and use no batch
//! slot. Faults are dealt to valid inference requests (chat, completions, responses,
//! embeddings, rerank) in arrival order; embeddings and rerank only get status and
//! slow-header faults.

mod cache;
mod faults;
mod format;
mod front;
mod generate;
mod golden;
mod histograms;
mod listen;
mod metrics;
mod request;
mod respond;
mod routes;
mod rx_stamp;
mod state;
mod stream;
mod tokens;
mod tools;
mod truth;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use crate::plan::sim_settings::{RouteRule, SimConfig, UsageMode};

/// Checks settings that would make the simulator misbehave.
pub fn validate(cfg: &SimConfig) -> Result<(), SimError> {
    Ok(cfg.validate()?)
}
pub use faults::Fault;
pub use state::ReceivedRequest;
pub use truth::{TruthRecord, TruthReport};

use front::Front;
use listen::SimListener;
pub use listen::{server_config, tls_config, SimTlsError};
use rx_stamp::RxInfo;
use state::SimState;

/// Why the simulator could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Setting(#[from] crate::plan::sim_settings::SettingError),
    #[error("simulator tokenizer")]
    Tokenizer(#[source] tokens::TokenizerError),
    #[error("simulator server failed")]
    Serve(#[source] std::io::Error),
}

/// Checks the settings and loads the tokenizer, without serving (the CLI calls this before it
/// binds, so a bad setting is reported before anything is printed).
pub fn check(config: &SimConfig) -> Result<(), SimError> {
    validate(config)?;
    tokens::TokenCounter::load(config.tokenizer.as_deref()).map_err(SimError::Tokenizer)?;
    Ok(())
}

/// The simulator behind one URL: its first worker and `workers - 1` more.
fn build_state(config: SimConfig, record_bodies: bool) -> Result<Arc<Front>, SimError> {
    validate(&config)?;
    let tokens =
        tokens::TokenCounter::load(config.tokenizer.as_deref()).map_err(SimError::Tokenizer)?;
    Ok(Arc::new(Front::new(SimState::new(
        config,
        tokens,
        record_bodies,
    ))))
}

/// Pending connections the listener queues (the kernel caps it at `net.core.somaxconn`).
/// The default of the standard library and tokio (128) drops SYNs when a client opens a
/// few hundred connections at once, and each drop costs the client a 1 s retransmit.
const LISTEN_BACKLOG: u32 = 8192;

/// Binds `addr` with a listen backlog large enough for thousands of simultaneous connects.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves the simulator on `listener` until the process ends (for `perfplan sim`), over
/// TLS with `tls` when given (see `tls_config`). Request bodies are not kept (a
/// long-running server would grow without bound).
pub async fn serve(
    config: SimConfig,
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Result<(), SimError> {
    let st = build_state(config, false)?;
    let app = routes::router(st).into_make_service_with_connect_info::<RxInfo>();
    axum::serve(SimListener::new(listener, tls), app)
        .await
        .map_err(SimError::Serve)
}

/// A running in-process simulator (tests and `sim://` endpoints).
pub struct SimServer {
    addr: SocketAddr,
    /// Serves HTTPS (`start_tls`).
    tls: bool,
    state: Arc<Front>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), std::io::Error>>>,
}

impl SimServer {
    /// Starts on 127.0.0.1 with an ephemeral port.
    pub async fn start(config: SimConfig) -> Result<SimServer, SimError> {
        Self::start_on(config, SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts on `addr` (port 0: ephemeral).
    pub(crate) async fn start_on(
        config: SimConfig,
        addr: SocketAddr,
    ) -> Result<SimServer, SimError> {
        Self::start_with(config, addr, None).await
    }

    /// Starts on 127.0.0.1 with an ephemeral port, serving HTTPS with `tls` (see
    /// `server_config`).
    pub async fn start_tls(
        config: SimConfig,
        tls: Arc<rustls::ServerConfig>,
    ) -> Result<SimServer, SimError> {
        Self::start_with(config, SocketAddr::from(([127, 0, 0, 1], 0)), Some(tls)).await
    }

    async fn start_with(
        config: SimConfig,
        addr: SocketAddr,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Result<SimServer, SimError> {
        let state = build_state(config, true)?;
        let listener = bind(addr).map_err(|source| SimError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| SimError::Bind { addr, source })?;
        let (stop, stopped) = oneshot::channel::<()>();
        let app = routes::router(state.clone()).into_make_service_with_connect_info::<RxInfo>();
        let https = tls.is_some();
        let listener = SimListener::new(listener, tls);
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(SimServer {
            addr,
            tls: https,
            state,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (`https://` with `start_tls`), followed by the mount when
    /// there is one.
    pub fn base_url(&self) -> String {
        let mount = self.state.main().cfg.mount.as_deref().unwrap_or_default();
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{mount}", self.addr)
    }

    /// `METHOD path` of every request that no route served (outside the mount).
    pub fn unserved(&self) -> Vec<String> {
        self.state.main().unserved()
    }

    /// `GET /metrics` requests served.
    pub fn scrapes(&self) -> u64 {
        self.state
            .main()
            .scrapes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `POST /reset_prefix_cache` requests served.
    pub fn cache_resets(&self) -> u64 {
        let resets = &self.state.main().resets;
        resets.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every request received on the API routes (`/v1/...`, `/rerank`, `/v2/rerank`), in
    /// arrival order, with its JSON body (`null` for GET or a body that is not JSON).
    pub fn received(&self) -> Vec<ReceivedRequest> {
        self.state.main().received()
    }

    /// Ground truth of every finished response so far (every worker's, in arrival order).
    pub fn truth(&self) -> Vec<TruthRecord> {
        self.state.truth(false).records
    }

    /// The server's start as Unix epoch microseconds (truth times are relative to it).
    pub fn start_unix_us(&self) -> u64 {
        self.state.main().start_unix_us
    }

    /// Stops accepting, ends open streams (stalled ones too) and waits up to a second.
    pub async fn shutdown(mut self) {
        self.state.close();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(std::time::Duration::from_secs(1), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.state.close();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
