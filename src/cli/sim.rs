//! `perfplan sim`: runs the built-in simulator as a standalone server until Ctrl-C.
//! Prints `listening on http://ADDR` (`https://` with `--tls-cert`) as the first line of
//! stdout (with `--replicas N`, one such line per replica, in order). Knows only `sim`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use crate::control::chain;
use crate::sim::{self, SimConfig};

/// Start the built-in OpenAI-compatible simulator (point any client at the printed address).
#[derive(Debug, Clone, Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,

    /// Port to listen on (0: any free port; the address is printed first).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Worker threads of the simulator's runtime (default: one per CPU). 1 runs it on one
    /// thread, which wakes faster when it shares a small machine with the client.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..), overrides_with = "threads")]
    pub threads: Option<u16>,
    /// Serve HTTPS with this certificate (a PEM file, the server's own certificate first;
    /// needs --tls-key). TLS 1.3 and 1.2, ALPN http/1.1, session resumption offered.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (a PEM file: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    #[command(flatten)]
    pub config: SimConfig,
}

const AFTER_HELP: &str = "\
Routes: POST /v1/chat/completions, /v1/completions, /v1/responses, /v1/embeddings, /v1/rerank;
GET /v1/models, /health, /version, /metrics (vLLM metric names); POST /reset_prefix_cache;
GET /sim/truth (per-request ground truth, ?reset=true) and DELETE /sim/truth;
all under --mount PATH when given. --tls-cert/--tls-key: HTTPS instead of HTTP, e.g. with
a self-signed certificate, trusted by the plan's `tls = { ca_file = \"cert.pem\" }`:
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \\
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \\
    -addext basicConstraints=critical,CA:FALSE -keyout key.pem -out cert.pem
--workers N: N workers behind the one address, each
with its own prefix cache, slots and queue, routed by --route (session: by the
--session-header value, round robin without it).

Example:
  perfplan sim --port 8000 --ttft-base 200ms --itl-base 20ms &
  curl -N http://127.0.0.1:8000/v1/chat/completions -H 'content-type: application/json' \\
    -d '{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,\"stream\":true}'";

/// Runs the simulator until it is interrupted.
pub fn run(args: SimArgs) -> Ended {
    let mut builder = match args.threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    if let Some(n) = args.threads.filter(|n| *n > 1) {
        builder.worker_threads(usize::from(n));
    }
    let runtime = builder.enable_all().build().map_err(|e| {
        Failure::new(
            exit::INVALID,
            format!("cannot start the async runtime: {}", chain(&e)),
        )
    })?;
    runtime.block_on(serve(args))
}

async fn serve(args: SimArgs) -> Ended {
    sim::check(&args.config).map_err(|e| Failure::of(exit::INVALID, &e))?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(Arc::new(
            sim::tls_config(cert, key).map_err(|e| Failure::of(exit::INVALID, &e))?,
        )),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mount = args.config.mount.as_deref().unwrap_or_default();
    let mut servers = Vec::new();
    for i in 0..args.config.replicas.max(1) {
        // Port 0: a free port each; otherwise consecutive ports from `--port`.
        let port = match args.port {
            0 => 0,
            p => p.saturating_add(u16::try_from(i).unwrap_or(u16::MAX)),
        };
        let addr = SocketAddr::new(args.host, port);
        let listener = sim::bind(addr).map_err(|e| {
            Failure::new(
                exit::INVALID,
                format!("cannot listen on {addr}: {}", chain(&e)),
            )
        })?;
        let bound = listener.local_addr().unwrap_or(addr);
        println!("listening on {scheme}://{bound}{mount}");
        servers.push(sim::serve(args.config.clone(), listener, tls.clone()));
    }
    let all = futures_util::future::try_join_all(servers);
    tokio::select! {
        r = all => r.map(|_| exit::OK).map_err(|e| Failure::of(exit::INVALID, &e)),
        _ = tokio::signal::ctrl_c() => Ok(exit::OK),
    }
}
