//! A shard's side of the barrier (shards 2 … N): it connects to shard 1 (again and again
//! until the timeout: shard 1 may start later), says who it is, measures its round trip
//! and clock offset, then per run says it is ready and waits for shard 1's `go`, or
//! passes the run. It says `alive` every second and gives up on a shard 1 silent for
//! [`SILENCE`].

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tokio::io::BufReader;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use super::wire::{self, Read, ToLeader, ToShard};
use super::{BarrierConfig, Command, HANDSHAKE, SILENCE};
use super::{BarrierError, Meeting};
use crate::record::facts::BarrierFacts;

/// Ping rounds at joining; the fastest gives the round trip and the clock offset.
const PINGS: u32 = 8;

/// The connection to shard 1 after joining.
struct Link {
    writer: OwnedWriteHalf,
    rtt_us: u64,
    /// Shard 1's clock minus this shard's, in microseconds.
    offset_us: i64,
}

/// This shard's barrier until the suite drops it (or finishes).
pub(super) async fn run(cfg: Arc<BarrierConfig>, mut commands: mpsc::UnboundedReceiver<Command>) {
    let (link, reader) = match join(&cfg).await {
        Ok(joined) => joined,
        Err(e) => return refuse_all(&mut commands, e).await,
    };
    let (tx, mut lines) = mpsc::unbounded_channel();
    let read_task = tokio::spawn(read(reader, tx));
    let mut f = Follower {
        cfg,
        link,
        waiting: None,
        failed: None,
        heard: Instant::now(),
    };
    let mut beat = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Finish { reply, .. }) => {
                    let _ = wire::send(&mut f.link.writer, &ToLeader::Done).await;
                    let _ = reply.send(Ok(()));
                    break;
                }
                Some(c) => f.command(c).await,
                None => break,
            },
            Some(line) = lines.recv() => f.line(line),
            _ = beat.tick() => f.beat().await,
        }
    }
    read_task.abort();
}

/// Every command gets the error of a barrier that could not be joined.
async fn refuse_all(commands: &mut mpsc::UnboundedReceiver<Command>, e: BarrierError) {
    while let Some(command) = commands.recv().await {
        match command {
            Command::Meet { reply, .. } => drop(reply.send(Err(e.clone()))),
            Command::Pass { reply, .. } => drop(reply.send(Err(e.clone()))),
            // The end of a suite that never met the others is no new error.
            Command::Finish { reply, .. } => drop(reply.send(Ok(()))),
        }
    }
}

async fn read(mut r: BufReader<OwnedReadHalf>, tx: mpsc::UnboundedSender<Read<ToShard>>) {
    loop {
        let line = wire::receive(&mut r).await;
        let last = !matches!(line, Read::Message(_));
        if tx.send(line).is_err() || last {
            return;
        }
    }
}

/// Connects to shard 1 until the timeout, then says who this shard is and measures the
/// round trip and the clock offset.
async fn join(cfg: &BarrierConfig) -> Result<(Link, BufReader<OwnedReadHalf>), BarrierError> {
    let started = Instant::now();
    let unreachable = |why: String| BarrierError::Unreachable {
        addr: cfg.addr.clone(),
        n: cfg.shard.n,
        waited_s: started.elapsed().as_secs_f64(),
        why,
    };
    let stream = loop {
        let why = match tokio::time::timeout(HANDSHAKE, TcpStream::connect(&cfg.addr)).await {
            Ok(Ok(stream)) => break stream,
            Ok(Err(e)) => e.to_string(),
            Err(_) => "the connection attempt timed out".to_string(),
        };
        if started.elapsed() > cfg.timeout {
            return Err(unreachable(why));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let _ = stream.set_nodelay(true);
    let (r, mut writer) = stream.into_split();
    let mut r = BufReader::new(r);
    let io = |e: std::io::Error| unreachable(e.to_string());
    let hello = ToLeader::Hello {
        shard: cfg.shard.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        plan: cfg.fingerprint.clone(),
    };
    wire::send(&mut writer, &hello).await.map_err(io)?;
    match answer(cfg, &mut r).await? {
        ToShard::Welcome => {}
        ToShard::Refuse { reason } => {
            return Err(BarrierError::Refused {
                addr: cfg.addr.clone(),
                shard: cfg.shard.to_string(),
                reason,
            })
        }
        other => return Err(protocol(cfg, &other)),
    }
    let (rtt_us, offset_us) = clock(cfg, &mut writer, &mut r).await?;
    wire::send(&mut writer, &ToLeader::Joined { rtt_us })
        .await
        .map_err(io)?;
    Ok((
        Link {
            writer,
            rtt_us,
            offset_us,
        },
        r,
    ))
}

/// The fastest of [`PINGS`] round trips, and the clock offset it gives (shard 1's
/// clock at the pong minus this shard's at the middle of the round trip).
async fn clock(
    cfg: &BarrierConfig,
    w: &mut OwnedWriteHalf,
    r: &mut BufReader<OwnedReadHalf>,
) -> Result<(u64, i64), BarrierError> {
    let mut best: Option<(u64, i64)> = None;
    for n in 0..PINGS {
        let (t0, wall0) = (Instant::now(), wire::wall_us());
        wire::send(w, &ToLeader::Ping { n })
            .await
            .map_err(|e| BarrierError::Lost {
                shard: format!("1/{}", cfg.shard.n),
                at: String::new(),
                why: e.to_string(),
            })?;
        let ToShard::Pong { wall_us, .. } = answer(cfg, r).await? else {
            return Err(protocol(cfg, &ToShard::Welcome));
        };
        let rtt = t0.elapsed().as_micros() as u64;
        let offset = wall_us as i64 - (wall0 + rtt / 2) as i64;
        if best.is_none_or(|(b, _)| rtt < b) {
            best = Some((rtt, offset));
        }
    }
    Ok(best.unwrap_or((0, 0)))
}

/// Shard 1's next message of the handshake.
async fn answer(
    cfg: &BarrierConfig,
    r: &mut BufReader<OwnedReadHalf>,
) -> Result<ToShard, BarrierError> {
    let lost = |why: &str| BarrierError::Lost {
        shard: format!("1/{}", cfg.shard.n),
        at: String::new(),
        why: why.to_string(),
    };
    match tokio::time::timeout(HANDSHAKE, wire::receive(r)).await {
        Ok(Read::Message(m)) => Ok(m),
        Ok(Read::Closed) => Err(lost("it closed the connection while this shard joined")),
        Ok(Read::Garbled(line)) => Err(BarrierError::Protocol {
            addr: cfg.addr.clone(),
            line,
        }),
        Err(_) => Err(lost("it did not answer while this shard joined")),
    }
}

fn protocol(cfg: &BarrierConfig, got: &ToShard) -> BarrierError {
    BarrierError::Protocol {
        addr: cfg.addr.clone(),
        line: serde_json::to_string(got).unwrap_or_default(),
    }
}

/// A run this shard waits at: its id, the suite's wait, since when.
type Waiting = (
    String,
    oneshot::Sender<Result<Meeting, BarrierError>>,
    Instant,
);

struct Follower {
    cfg: Arc<BarrierConfig>,
    link: Link,
    /// The run this shard waits at: its id, the suite's wait, since when.
    waiting: Option<Waiting>,
    failed: Option<BarrierError>,
    heard: Instant,
}

impl Follower {
    fn leader(&self) -> String {
        format!("1/{} (the barrier, at {})", self.cfg.shard.n, self.cfg.addr)
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Meet { run, reply } => {
                if let Some(e) = &self.failed {
                    let _ = reply.send(Err(e.clone()));
                    return;
                }
                let ready = ToLeader::Ready { run: run.clone() };
                if let Err(e) = wire::send(&mut self.link.writer, &ready).await {
                    self.fail_with(&run, e.to_string());
                }
                match &self.failed {
                    Some(e) => drop(reply.send(Err(e.clone()))),
                    None => self.waiting = Some((run, reply, Instant::now())),
                }
            }
            Command::Pass { run, reply } => {
                if self.failed.is_none() {
                    let pass = ToLeader::Pass { run: run.clone() };
                    if let Err(e) = wire::send(&mut self.link.writer, &pass).await {
                        self.fail_with(&run, e.to_string());
                    }
                }
                let _ = reply.send(self.failed.clone().map_or(Ok(()), Err));
            }
            Command::Finish { .. } => {}
        }
    }

    fn line(&mut self, line: Read<ToShard>) {
        self.heard = Instant::now();
        match line {
            Read::Message(ToShard::Go { run, delay_us }) => {
                let Some((waiting, reply, since)) = self.waiting.take() else {
                    return;
                };
                if waiting != run {
                    self.waiting = Some((waiting, reply, since));
                    return;
                }
                let delay = Duration::from_micros(delay_us);
                let facts = BarrierFacts {
                    role: "follower".into(),
                    leader: Some(self.cfg.addr.clone()),
                    shards_ready: None,
                    rtt_us: self.link.rtt_us,
                    clock_offset_us: self.link.offset_us,
                    waited_ms: since.elapsed().as_secs_f64() * 1e3,
                    delay_ms: delay.as_secs_f64() * 1e3,
                };
                let start = SystemTime::now() + delay;
                let _ = reply.send(Ok(Meeting { start, facts }));
            }
            Read::Message(ToShard::Abort { reason }) => self.fail(BarrierError::Aborted { reason }),
            Read::Message(_) => {}
            Read::Closed => {
                let run = self
                    .waiting
                    .as_ref()
                    .map(|w| w.0.clone())
                    .unwrap_or_default();
                self.fail_with(&run, "its connection closed".into());
            }
            Read::Garbled(line) => self.fail(BarrierError::Protocol {
                addr: self.cfg.addr.clone(),
                line,
            }),
        }
    }

    async fn beat(&mut self) {
        if self.failed.is_some() {
            return;
        }
        if self.heard.elapsed() > SILENCE {
            let run = self
                .waiting
                .as_ref()
                .map(|w| w.0.clone())
                .unwrap_or_default();
            return self.fail_with(
                &run,
                format!("it has not answered for {} s", SILENCE.as_secs()),
            );
        }
        if let Err(e) = wire::send(&mut self.link.writer, &ToLeader::Alive).await {
            self.fail_with("", e.to_string());
        }
    }

    /// Shard 1 is lost (`run`: where this shard was, or empty).
    fn fail_with(&mut self, run: &str, why: String) {
        let at = match run {
            "" => String::new(),
            run => format!(" before run {run}"),
        };
        self.fail(BarrierError::Lost {
            shard: self.leader(),
            at,
            why,
        });
    }

    fn fail(&mut self, e: BarrierError) {
        if let Some((_, reply, _)) = self.waiting.take() {
            let _ = reply.send(Err(e.clone()));
        }
        self.failed.get_or_insert(e);
    }
}
