//! Servers launched by the plan: `launch` run through `sh -c` in its own process group
//! (output to `servers/<endpoint>.log`), `ready` polled until it answers 200, `stop` (or
//! SIGTERM to the process group, then SIGKILL after a grace period), `reset_cache`, and the
//! `{port}` placeholder filled with a free port. Only processes started here are signalled.
//! Knows endpoint specs, not runs. This file owns the settings, the error and the public
//! paths; its children own the parts: `process` (shell commands, process groups, logs),
//! `servers` (launching and stopping a suite's servers), `ready` (readiness polling) and
//! `reset` (emptying a server's prefix cache).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod launched;
mod process;
mod ready;
mod reset;
pub mod sims;

pub use launched::Servers;
pub use process::{fill_port, kill_registered, log_tail, signal_group};
pub use reset::{reset_cache, reset_warning};

/// The placeholder filled with a free TCP port in `base_url`, `launch`, `ready`, `stop`
/// and `reset_cache` of an endpoint with `launch`.
pub(crate) const PORT_PLACEHOLDER: &str = "{port}";
/// Lines of a server log quoted in errors.
const TAIL_LINES: usize = 15;

/// Why a launched server is not usable.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    #[error("cannot write the server log {}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the launched server exited ({status}); last lines of {}:\n{tail}", log.display())]
    Exited {
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("the launched server did not answer 200 on {url} within {waited}; last lines of {}:\n{tail}", log.display())]
    NotReady {
        url: String,
        waited: crate::units::HumanDuration,
        log: PathBuf,
        tail: String,
    },
    #[error("the launched server at {url} failed the TLS handshake: {problem}")]
    Tls { url: String, problem: String },
    #[error("cannot reach the launched server")]
    Control(#[source] crate::control::ControlError),
    #[error("no free port for {PORT_PLACEHOLDER}")]
    Port(#[source] std::io::Error),
    #[error("the server failed to start earlier in this suite: {0}")]
    Earlier(String),
}

/// Process group ids of launched servers, shared with the Ctrl-C handler.
pub(crate) type Registry = Arc<Mutex<BTreeSet<u32>>>;
