//! Opening a run's connections before its clock starts, so the first requests of a
//! concurrency tier are sent on established connections instead of paying the client's
//! own connect burst (hundreds of SYNs at once) inside their timings.
//!
//! The rule: the lean client's pool is topped up to the connections the load keeps open
//! (`RunConfig::pool_size`: closed loop the concurrency, open loop `max_in_flight` or its
//! estimate), never more than the run has requests, at most [`WINDOW`] connects at a time.
//! Connections already idle in the pool (an earlier pass of the same endpoint) count,
//! unless the server has closed them meanwhile (a keep-alive timeout between runs).
//! Pre-connecting stops at the first failure: the run's requests meet the same server and
//! record it. The reqwest path cannot pre-connect (its pool opens connections only for
//! requests); there, each request's own connection setup is recorded and kept out of TTFT.

use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::h1::H1Client;
use crate::record::facts::PreconnectFacts;

/// Most connects in flight at once: below the smallest listen backlog of common servers
/// (Python asyncio's 100, the Rust standard library's and tokio's 128; uvicorn's is 2048),
/// so a burst does not overflow a server's accept queue, where each dropped SYN costs a
/// 1 s retransmit.
pub(crate) const WINDOW: usize = 64;

/// A connect this slow waited for a SYN retransmit (Linux's first one is at 1 s).
pub(crate) const SLOW_CONNECT: Duration = Duration::from_secs(1);

/// What pre-connecting did before a run's first request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconnect {
    /// Connections the load wanted open (the pool size, at most the run's requests).
    pub wanted: usize,
    /// Connections opened now (the others were already open, or pre-connecting stopped).
    pub opened: usize,
    /// TCP connects that took [`SLOW_CONNECT`] or longer.
    pub slow: usize,
    /// The slowest TCP connect.
    pub slowest: Duration,
    /// From the first connect to the last.
    pub wall: Duration,
    /// The first failure, where pre-connecting stopped.
    pub error: Option<String>,
    /// TLS handshakes completed (`https://`: one per connection opened) ...
    pub tls_handshakes: usize,
    /// ... of which the server resumed an earlier session ...
    pub tls_resumed: usize,
    /// ... their time together ...
    pub tls_handshake_total: Duration,
    /// ... and the slowest (each also inside its connection's connect time).
    pub tls_handshake_max: Duration,
}

impl Preconnect {
    /// A warning for the run when pre-connecting met slow connects or a failure.
    pub fn warning(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(format!(
                "pre-connecting {} connections stopped after {} opened: {e}",
                self.wanted, self.opened
            ));
        }
        (self.slow > 0).then(|| {
            format!(
                "{} of {} connections opened before the run took over {} s (slowest {} ms): \
                 SYN retransmits, the server's listen backlog is smaller than the connect \
                 burst (raise it, e.g. uvicorn's `--backlog`)",
                self.slow,
                self.opened,
                SLOW_CONNECT.as_secs(),
                self.slowest.as_millis()
            )
        })
    }
}

impl Preconnect {
    /// This pre-connect followed by `later` (the engine's own top-up after the suite's).
    pub fn then(self, later: Option<Preconnect>) -> Preconnect {
        let Some(l) = later else {
            return self;
        };
        Preconnect {
            wanted: self.wanted.max(l.wanted),
            opened: self.opened + l.opened,
            slow: self.slow + l.slow,
            slowest: self.slowest.max(l.slowest),
            wall: self.wall + l.wall,
            error: self.error.or(l.error),
            tls_handshakes: self.tls_handshakes + l.tls_handshakes,
            tls_resumed: self.tls_resumed + l.tls_resumed,
            tls_handshake_total: self.tls_handshake_total + l.tls_handshake_total,
            tls_handshake_max: self.tls_handshake_max.max(l.tls_handshake_max),
        }
    }

    /// This pre-connect and `other`'s, done one after the other on another replica.
    pub fn beside(self, other: Option<Preconnect>) -> Preconnect {
        let Some(o) = other else {
            return self;
        };
        Preconnect {
            wanted: self.wanted + o.wanted,
            ..self.then(Some(o))
        }
    }

    /// The run's facts section (the TLS fields for `https://` only).
    pub fn facts(&self) -> PreconnectFacts {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let tls = self.tls_handshakes > 0;
        let mean = ms(self.tls_handshake_total) / self.tls_handshakes as f64;
        PreconnectFacts {
            wanted: self.wanted as u64,
            opened: self.opened as u64,
            slow: self.slow as u64,
            slowest_ms: ms(self.slowest),
            wall_ms: ms(self.wall),
            error: self.error.clone(),
            tls_handshakes: Some(self.tls_handshakes as u64).filter(|_| tls),
            tls_resumed: Some(self.tls_resumed as u64).filter(|_| tls),
            tls_handshake_mean_ms: Some(mean).filter(|_| tls),
            tls_handshake_max_ms: Some(ms(self.tls_handshake_max)).filter(|_| tls),
        }
    }
}

/// Tops `h1`'s idle pool up to `wanted` connections, [`WINDOW`] connects at a time.
pub(crate) async fn fill(h1: &H1Client, wanted: usize) -> Preconnect {
    h1.prune_idle();
    let missing = h1.idle_room().min(wanted.saturating_sub(h1.idle_count()));
    let mut report = Preconnect {
        wanted,
        ..Preconnect::default()
    };
    let began = Instant::now();
    let mut pending = FuturesUnordered::new();
    let mut started = 0;
    loop {
        while started < missing && pending.len() < WINDOW && report.error.is_none() {
            pending.push(h1.connect());
            started += 1;
        }
        let Some(result) = pending.next().await else {
            break;
        };
        match result {
            Ok(conn) => {
                report.opened += 1;
                // The TCP connect alone: a slow TLS handshake is no SYN retransmit.
                let tcp = conn
                    .setup
                    .saturating_sub(conn.tls.map_or(Duration::ZERO, |t| t.took));
                report.slowest = report.slowest.max(tcp);
                report.slow += usize::from(tcp >= SLOW_CONNECT);
                if let Some(tls) = conn.tls {
                    report.tls_handshakes += 1;
                    report.tls_resumed += usize::from(tls.resumed);
                    report.tls_handshake_total += tls.took;
                    report.tls_handshake_max = report.tls_handshake_max.max(tls.took);
                }
                h1.checkin(conn);
            }
            Err(e) => {
                let failure = super::exchange::connect_failure(&e);
                report.error.get_or_insert(failure.error);
            }
        }
    }
    report.wall = began.elapsed();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_name_the_cause() {
        let calm = Preconnect {
            wanted: 4,
            opened: 4,
            ..Preconnect::default()
        };
        assert_eq!(calm.warning(), None);
        let slow = Preconnect {
            slow: 2,
            slowest: Duration::from_millis(1013),
            ..calm.clone()
        };
        let w = slow.warning().unwrap_or_default();
        assert!(
            w.contains("2 of 4") && w.contains("1013 ms") && w.contains("backlog"),
            "{w}"
        );
        let failed = Preconnect {
            opened: 1,
            error: Some("connect: refused".into()),
            ..calm
        };
        let w = failed.warning().unwrap_or_default();
        assert!(
            w.contains("4 connections stopped after 1") && w.contains("refused"),
            "{w}"
        );
    }
}
