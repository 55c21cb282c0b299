//! Shard 1's listening socket and the shards' connections: it binds, admits each shard
//! that says `hello` (same shard count, perfplan version and plan), answers its clock
//! pings, then hands the leader every line it sends as an event. Each connection's reads
//! are a task of their own, so a slow shard never blocks another.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::wire::{self, Read, ToLeader, ToShard};
use super::BarrierError;
use super::{BarrierConfig, HANDSHAKE};
use crate::distribute::shard::Shard;

/// The address shard 1 listens on for `addr` (`host:port`): the loopback address when
/// the host is this machine's loopback, else every interface, on the port.
pub(super) fn bind(addr: &str) -> Result<std::net::TcpListener, BarrierError> {
    let listen = listen_address(addr);
    let err = |e: std::io::Error| BarrierError::Listen {
        addr: listen.to_string(),
        why: e.to_string(),
    };
    let l = std::net::TcpListener::bind(listen).map_err(err)?;
    l.set_nonblocking(true).map_err(err)?;
    Ok(l)
}

fn listen_address(addr: &str) -> SocketAddr {
    let port = addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(super::DEFAULT_PORT);
    let resolved: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default();
    match resolved.first() {
        Some(first) if resolved.iter().all(|a| a.ip().is_loopback()) => *first,
        Some(SocketAddr::V6(_)) => SocketAddr::from(([0u16; 8], port)),
        _ => SocketAddr::from(([0, 0, 0, 0], port)),
    }
}

/// What the connections tell the leader.
pub(super) enum Event {
    Joined {
        k: u32,
        writer: OwnedWriteHalf,
        rtt_us: u64,
    },
    Message {
        k: u32,
        msg: ToLeader,
    },
    Closed {
        k: u32,
        why: String,
    },
}

pub(super) async fn accept(
    listener: TcpListener,
    cfg: Arc<BarrierConfig>,
    events: mpsc::UnboundedSender<Event>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(stream, cfg.clone(), events.clone()));
            }
            // Out of descriptors, or the like: try again shortly, never spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Which shard a `hello` is, or why it is refused.
fn admit(cfg: &BarrierConfig, shard: &str, version: &str, plan: &str) -> Result<u32, String> {
    let n = cfg.shard.n;
    let s: Shard = shard
        .parse()
        .map_err(|_| format!("`{shard}` is not a shard K/N"))?;
    if s.n != n {
        return Err(format!("it is a shard of {}, shard 1 of {n}", s.n));
    }
    if s.k == 1 {
        return Err("it says it is shard 1, and shard 1 is the barrier".into());
    }
    let ours = env!("CARGO_PKG_VERSION");
    if version != ours {
        return Err(format!(
            "it runs perfplan {version}, shard 1 perfplan {ours}"
        ));
    }
    if plan != cfg.fingerprint {
        return Err(
            "its plan is not shard 1's (the plan's text, imports, --set overrides or seed differ)"
                .into(),
        );
    }
    Ok(s.k)
}

/// One shard's connection: its `hello` and pings, then every line it sends, as events.
async fn connection(
    stream: TcpStream,
    cfg: Arc<BarrierConfig>,
    events: mpsc::UnboundedSender<Event>,
) {
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let k = match tokio::time::timeout(HANDSHAKE, wire::receive(&mut r)).await {
        Ok(Read::Message(ToLeader::Hello {
            shard,
            version,
            plan,
        })) => match admit(&cfg, &shard, &version, &plan) {
            Ok(k) => k,
            Err(reason) => {
                let _ = wire::send(&mut w, &ToShard::Refuse { reason }).await;
                return;
            }
        },
        // Not a shard of perfplan: nothing to say to it.
        _ => return,
    };
    if wire::send(&mut w, &ToShard::Welcome).await.is_err() {
        return;
    }
    let rtt_us = loop {
        match tokio::time::timeout(HANDSHAKE, wire::receive(&mut r)).await {
            Ok(Read::Message(ToLeader::Ping { n })) => {
                let pong = ToShard::Pong {
                    n,
                    wall_us: wire::wall_us(),
                };
                if wire::send(&mut w, &pong).await.is_err() {
                    return;
                }
            }
            Ok(Read::Message(ToLeader::Joined { rtt_us })) => break rtt_us,
            _ => return,
        }
    };
    if events
        .send(Event::Joined {
            k,
            writer: w,
            rtt_us,
        })
        .is_err()
    {
        return;
    }
    loop {
        let event = match wire::receive(&mut r).await {
            Read::Message(msg) => Event::Message { k, msg },
            Read::Closed => Event::Closed {
                k,
                why: "its connection closed".into(),
            },
            Read::Garbled(line) => Event::Closed {
                k,
                why: format!("it sent `{line}`, which is not the barrier's protocol"),
            },
        };
        let last = matches!(event, Event::Closed { .. });
        if events.send(event).is_err() || last {
            return;
        }
    }
}
