//! The start barrier over TCP, with no service but the shards themselves: shard 1
//! listens (on the barrier address's port) and every other shard connects to it, at the
//! address the engine's own naming gives (`addr`: a headless Service's DNS name under
//! Kubernetes, the first host of the allocation under Slurm, or `PERFPLAN_BARRIER`).
//! Before each run's load every shard says it is ready (or passes the run); once all N
//! have, shard 1 sends each a delay to wait from receipt, corrected by half its measured
//! round trip, so the shards start within a fraction of a millisecond of one instant
//! whatever their wall clocks say. Each shard also measures its clock's offset to
//! shard 1's (the best of several round trips), stored with every run so `merge` puts
//! the shards' rows on shard 1's clock.
//!
//! Never a hang: a shard that does not arrive within the timeout (counted from the first
//! arrival of a shard that ran the previous run, so shards with no share of a long run
//! are not counted early), one whose connection closes, or one silent for
//! [`SILENCE`], fails the barrier on every shard with its name. The barrier runs on a
//! thread of its own, so a busy suite never delays its messages.

mod addr;
mod contract;
mod follower;
mod leader;
mod listen;
mod wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::distribute::shard::Shard;
pub use contract::{BarrierError, BarrierFuture, Meeting, StartBarrier};

pub use addr::{barrier_address, AddrError, DEFAULT_PORT};

/// How much later than its announcement a run starts, beyond twice the slowest round
/// trip: enough for the announcement to reach every shard and wake it.
pub const MARGIN: Duration = Duration::from_millis(100);
/// A peer not heard from for this long is lost (each side says `alive` every second).
pub(crate) const SILENCE: Duration = Duration::from_secs(15);
/// How long a connected shard may take to say who it is.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// How a shard takes part in the barrier.
#[derive(Debug, Clone)]
pub(crate) struct BarrierConfig {
    pub shard: Shard,
    /// `host:port` of shard 1.
    pub addr: String,
    /// How long the barrier waits for a shard to arrive (or to connect).
    pub timeout: Duration,
    /// The perfplan version and plan every shard must share (`suite::fingerprint`).
    pub fingerprint: String,
}

/// What the suite (through [`StartBarrier`]) and the CLI ask the barrier's thread.
enum Command {
    Meet {
        run: String,
        reply: oneshot::Sender<Result<Meeting, BarrierError>>,
    },
    Pass {
        run: String,
        reply: oneshot::Sender<Result<(), BarrierError>>,
    },
    /// The suite ended; `wait`: shard 1 waits until every shard's suite has.
    Finish {
        wait: bool,
        reply: oneshot::Sender<Result<(), BarrierError>>,
    },
}

/// A shard's side of the barrier; dropping it ends the barrier's thread (shard 1 then
/// stops any shard still waiting, with the reason).
#[derive(Debug)]
pub(crate) struct TcpBarrier {
    /// Shard 1's address (port 0 asked of shard 1: the port it was given).
    addr: String,
    commands: Mutex<Option<mpsc::UnboundedSender<Command>>>,
    ended: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Command::Meet { .. } => "meet",
            Command::Pass { .. } => "pass",
            Command::Finish { .. } => "finish",
        })
    }
}

impl TcpBarrier {
    /// Starts this shard's side: shard 1 listens at once (an address in use is an error
    /// here, before any run), the others connect in the background.
    pub fn start(mut cfg: BarrierConfig) -> Result<Arc<TcpBarrier>, BarrierError> {
        let listener = match cfg.shard.k {
            1 => Some(listen::bind(&cfg.addr)?),
            _ => None,
        };
        if let Some(port) = listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port())
        {
            if let Some((host, _)) = cfg.addr.rsplit_once(':') {
                cfg.addr = format!("{host}:{port}");
            }
        }
        let addr = cfg.addr.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        let (ended_tx, ended_rx) = std::sync::mpsc::channel();
        let cfg = Arc::new(cfg);
        std::thread::Builder::new()
            .name("perfplan-barrier".into())
            .spawn(move || {
                if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    match listener {
                        Some(l) => rt.block_on(leader::run(l, cfg, rx)),
                        None => rt.block_on(follower::run(cfg, rx)),
                    }
                }
                let _ = ended_tx.send(());
            })
            .map_err(|e| BarrierError::Listen {
                addr: "a thread of its own".into(),
                why: e.to_string(),
            })?;
        Ok(Arc::new(TcpBarrier {
            addr,
            commands: Mutex::new(Some(tx)),
            ended: Mutex::new(Some(ended_rx)),
        }))
    }

    /// Shard 1's `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn send(&self, command: Command) -> Result<(), BarrierError> {
        let guard = self.commands.lock().map_err(|_| BarrierError::Gone)?;
        let tx = guard.as_ref().ok_or(BarrierError::Gone)?;
        tx.send(command).map_err(|_| BarrierError::Gone)
    }

    /// The suite is over. `wait` (shard 1 before `--merge`): blocks until every shard
    /// has said its suite is over, or the timeout names those that did not. Then ends
    /// the barrier's thread.
    pub fn finish(&self, wait: bool) -> Result<(), BarrierError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Finish { wait, reply })?;
        let result = answer.blocking_recv().unwrap_or(Err(BarrierError::Gone));
        self.close();
        result
    }

    /// Ends the thread and waits (a second at most) for its last messages to go out.
    fn close(&self) {
        if let Ok(mut tx) = self.commands.lock() {
            tx.take();
        }
        if let Some(ended) = self.ended.lock().ok().and_then(|mut e| e.take()) {
            let _ = ended.recv_timeout(Duration::from_secs(1));
        }
    }
}

impl Drop for TcpBarrier {
    fn drop(&mut self) {
        self.close();
    }
}

impl StartBarrier for TcpBarrier {
    fn meet<'a>(&'a self, run: &'a str) -> BarrierFuture<'a, Meeting> {
        let (reply, answer) = oneshot::channel();
        let sent = self.send(Command::Meet {
            run: run.to_string(),
            reply,
        });
        Box::pin(async move {
            sent?;
            answer.await.unwrap_or(Err(BarrierError::Gone))
        })
    }

    fn pass<'a>(&'a self, run: &'a str) -> BarrierFuture<'a, ()> {
        let (reply, answer) = oneshot::channel();
        let sent = self.send(Command::Pass {
            run: run.to_string(),
            reply,
        });
        Box::pin(async move {
            sent?;
            answer.await.unwrap_or(Err(BarrierError::Gone))
        })
    }
}

/// Shards as listed in messages: `2/4, 3/4`.
fn list(shards: impl IntoIterator<Item = u32>, n: u32) -> String {
    let all: Vec<String> = shards.into_iter().map(|k| format!("{k}/{n}")).collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

#[cfg(test)]
mod tests;
