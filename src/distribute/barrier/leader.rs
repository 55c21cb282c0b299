//! Shard 1's side of the barrier: it releases each run once every shard has arrived at
//! it or passed it, and keeps the timeouts and the liveness of the shards. The shards'
//! connections (admission, clock pings, their lines as events) are `listen`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use super::listen::{accept, Event};
use super::wire::{self, ToLeader, ToShard};
use super::{list, BarrierConfig, Command, MARGIN, SILENCE};
use super::{BarrierError, Meeting};
use crate::record::facts::BarrierFacts;

/// A connected shard.
struct Peer {
    writer: OwnedWriteHalf,
    rtt_us: u64,
    heard: Instant,
    done: bool,
}

/// A run some shard has arrived at: who (`true`: ready, `false`: passed), since when
/// the timeout counts, and shard 1's own wait.
#[derive(Default)]
struct Waiting {
    arrived: BTreeMap<u32, bool>,
    since: Option<Instant>,
    own: Option<(oneshot::Sender<Result<Meeting, BarrierError>>, Instant)>,
}

/// The end of the suite, awaited before `--merge`.
struct Finishing {
    reply: oneshot::Sender<Result<(), BarrierError>>,
    since: Instant,
}

struct Leader {
    cfg: Arc<BarrierConfig>,
    peers: BTreeMap<u32, Peer>,
    runs: BTreeMap<String, Waiting>,
    /// The shards that started the last released run.
    went: BTreeSet<u32>,
    failed: Option<BarrierError>,
    finishing: Option<Finishing>,
    /// Shards whose suite ended and whose connection then closed.
    ended: BTreeSet<u32>,
}

/// Shard 1's barrier until the suite drops it (or finishes).
pub(super) async fn run(
    listener: std::net::TcpListener,
    cfg: Arc<BarrierConfig>,
    mut commands: mpsc::UnboundedReceiver<Command>,
) {
    let (tx, mut events) = mpsc::unbounded_channel();
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    let acceptor = tokio::spawn(accept(listener, cfg.clone(), tx));
    let mut leader = Leader {
        cfg,
        peers: BTreeMap::new(),
        runs: BTreeMap::new(),
        went: BTreeSet::new(),
        failed: None,
        finishing: None,
        ended: BTreeSet::new(),
    };
    let mut beat = tokio::time::interval(Duration::from_secs(1));
    let mut check = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Finish { wait: false, reply }) => {
                    let _ = reply.send(Ok(()));
                    break;
                }
                Some(c) => leader.command(c).await,
                None => break,
            },
            Some(event) = events.recv() => leader.event(event).await,
            _ = beat.tick() => leader.broadcast(&ToShard::Alive).await,
            _ = check.tick() => leader.check().await,
        }
        if leader.finished().await {
            break;
        }
    }
    acceptor.abort();
    leader.stop().await;
}

impl Leader {
    fn n(&self) -> u32 {
        self.cfg.shard.n
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Meet { run, reply } => {
                if let Some(e) = &self.failed {
                    let _ = reply.send(Err(e.clone()));
                    return;
                }
                let w = self.runs.entry(run.clone()).or_default();
                w.own = Some((reply, Instant::now()));
                self.arrive(&run, 1, true).await;
            }
            Command::Pass { run, reply } => {
                let _ = reply.send(self.failed.clone().map_or(Ok(()), Err));
                if self.failed.is_none() {
                    self.arrive(&run, 1, false).await;
                }
            }
            Command::Finish { reply, .. } => {
                self.finishing = Some(Finishing {
                    reply,
                    since: Instant::now(),
                });
            }
        }
    }

    async fn event(&mut self, event: Event) {
        match event {
            Event::Joined { k, writer, rtt_us } => {
                let peer = Peer {
                    writer,
                    rtt_us,
                    heard: Instant::now(),
                    done: false,
                };
                if let Some(mut p) = self.peers.insert(k, peer) {
                    let reason = format!("shard {k}/{} connected twice", self.n());
                    let _ = wire::send(&mut p.writer, &ToShard::Abort { reason }).await;
                }
            }
            Event::Message { k, msg } => {
                if let Some(p) = self.peers.get_mut(&k) {
                    p.heard = Instant::now();
                }
                match msg {
                    ToLeader::Ready { run } => self.arrive(&run, k, true).await,
                    ToLeader::Pass { run } => self.arrive(&run, k, false).await,
                    ToLeader::Done => {
                        if let Some(p) = self.peers.get_mut(&k) {
                            p.done = true;
                        }
                    }
                    _ => {}
                }
            }
            Event::Closed { k, why } => {
                let done = self.peers.remove(&k).is_some_and(|p| p.done);
                if done {
                    self.ended.insert(k);
                } else {
                    let at = self
                        .pending_run()
                        .map_or(String::new(), |r| format!(" before run {r}"));
                    let shard = format!("{k}/{}", self.n());
                    self.fail(BarrierError::Lost { shard, at, why }).await;
                }
            }
        }
    }

    /// The run shards are waiting at, if any.
    fn pending_run(&self) -> Option<&String> {
        self.runs.keys().next()
    }

    /// Shard `k` arrived at `run` (ready to start it, or passing it).
    async fn arrive(&mut self, run: &str, k: u32, ready: bool) {
        if self.failed.is_some() {
            return;
        }
        let counts = self.went.is_empty() || self.went.contains(&k);
        let w = self.runs.entry(run.to_string()).or_default();
        w.arrived.insert(k, ready);
        if counts && w.since.is_none() {
            w.since = Some(Instant::now());
        }
        if w.arrived.len() as u32 == self.n() {
            self.release(run).await;
        }
    }

    /// Every shard is at `run`: each ready one is told when to start it.
    async fn release(&mut self, run: &str) {
        let Some(w) = self.runs.remove(run) else {
            return;
        };
        let ready: BTreeSet<u32> = w
            .arrived
            .iter()
            .filter(|(_, r)| **r)
            .map(|(k, _)| *k)
            .collect();
        let slowest = ready
            .iter()
            .filter_map(|k| self.peers.get(k))
            .map(|p| p.rtt_us)
            .max()
            .unwrap_or(0);
        let delay = MARGIN + Duration::from_micros(2 * slowest);
        let t0 = Instant::now();
        for k in &ready {
            let Some(p) = self.peers.get_mut(k) else {
                continue;
            };
            let left = delay.saturating_sub(t0.elapsed());
            let delay_us = (left.as_micros() as u64).saturating_sub(p.rtt_us / 2);
            let go = ToShard::Go {
                run: run.to_string(),
                delay_us,
            };
            let _ = wire::send(&mut p.writer, &go).await;
        }
        if let Some((reply, arrived)) = w.own {
            let start = SystemTime::now() + delay.saturating_sub(t0.elapsed());
            let facts = BarrierFacts {
                role: "leader".into(),
                leader: None,
                shards_ready: Some(ready.len() as u64),
                rtt_us: 0,
                clock_offset_us: 0,
                waited_ms: arrived.elapsed().as_secs_f64() * 1e3,
                delay_ms: delay.as_secs_f64() * 1e3,
            };
            let _ = reply.send(Ok(Meeting { start, facts }));
        }
        self.went = ready;
    }

    /// Timeouts of runs and of the suite's end, and shards gone silent.
    async fn check(&mut self) {
        if self.failed.is_some() {
            return;
        }
        let n = self.n();
        let late = self.runs.iter().find_map(|(run, w)| {
            let waited = w.since?.elapsed();
            (waited > self.cfg.timeout).then(|| BarrierError::Missing {
                run: run.clone(),
                missing: self.absent(w.arrived.keys().copied().collect()),
                arrived: list(w.arrived.keys().copied(), n),
                waited_s: waited.as_secs_f64(),
            })
        });
        if let Some(e) = late {
            return self.fail(e).await;
        }
        let silent = self
            .peers
            .iter()
            .find(|(_, p)| !p.done && p.heard.elapsed() > SILENCE)
            .map(|(k, _)| *k);
        if let Some(k) = silent {
            let at = self
                .pending_run()
                .map_or(String::new(), |r| format!(" before run {r}"));
            let why = format!("it has not answered for {} s", SILENCE.as_secs());
            self.fail(BarrierError::Lost {
                shard: format!("{k}/{n}"),
                at,
                why,
            })
            .await;
        }
    }

    /// The shards not in `present`, those that never connected said so.
    fn absent(&self, present: BTreeSet<u32>) -> String {
        let n = self.n();
        (1..=n)
            .filter(|k| !present.contains(k))
            .map(
                |k| match k == 1 || self.peers.contains_key(&k) || self.ended.contains(&k) {
                    true => format!("{k}/{n}"),
                    false => format!("{k}/{n} (never joined)"),
                },
            )
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the suite's end was awaited and has come (every shard done, or the wait
    /// timed out): the answer is given.
    async fn finished(&mut self) -> bool {
        let Some(f) = &self.finishing else {
            return false;
        };
        let n = self.n();
        let ended: BTreeSet<u32> = std::iter::once(1)
            .chain(self.peers.iter().filter(|(_, p)| p.done).map(|(k, _)| *k))
            .chain(self.ended.iter().copied())
            .collect();
        let result = if let Some(e) = &self.failed {
            Err(e.clone())
        } else if ended.len() as u32 == n {
            Ok(())
        } else if f.since.elapsed() > self.cfg.timeout {
            Err(BarrierError::NotDone {
                missing: self.absent(ended.clone()),
                ended: list(ended, n),
                waited_s: f.since.elapsed().as_secs_f64(),
            })
        } else {
            return false;
        };
        if let Some(f) = self.finishing.take() {
            let _ = f.reply.send(result);
        }
        true
    }

    /// The barrier failed: shard 1's own wait gets the error, every shard the reason.
    async fn fail(&mut self, e: BarrierError) {
        if self.failed.is_some() {
            return;
        }
        for w in std::mem::take(&mut self.runs).into_values() {
            if let Some((reply, _)) = w.own {
                let _ = reply.send(Err(e.clone()));
            }
        }
        let reason = e.to_string();
        self.failed = Some(e);
        self.broadcast(&ToShard::Abort { reason }).await;
    }

    async fn broadcast(&mut self, msg: &ToShard) {
        for p in self.peers.values_mut() {
            let _ = wire::send(&mut p.writer, msg).await;
        }
    }

    /// Shard 1's suite is over: a shard still waiting at a run is stopped with the reason.
    async fn stop(&mut self) {
        let n = self.n();
        if let Some(run) = self.pending_run().cloned() {
            let reason = format!("shard 1/{n} (the barrier) ended its suite before run {run}");
            self.broadcast(&ToShard::Abort { reason }).await;
        }
    }
}
