//! The TLS sessions the lean client keeps to resume its next connections to a server
//! (`Resumption` of its rustls configuration). rustls's own memory cache keeps at most 8
//! TLS 1.3 tickets per server, and a ticket serves one connection: when a server closes a
//! tier's kept-alive connections together, all but 8 of the reconnects would pay a full
//! handshake that a client with a bigger cache (a browser, an SDK's pool) would not. This
//! store keeps as many tickets as the endpoint keeps connections (twice, at least 8: servers
//! send two per connection), the oldest dropped first. Knows nothing about HTTP.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;

use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// Most tickets kept per server, whatever the pool.
const MAX_TICKETS: usize = 8192;

/// Servers remembered (an endpoint talks to one; a few guard against surprises).
const MAX_SERVERS: usize = 16;

/// Session tickets and hints by server name.
pub(crate) struct Sessions {
    per_server: usize,
    servers: Mutex<HashMap<ServerName<'static>, Server>>,
}

#[derive(Default)]
struct Server {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    /// Oldest first.
    tls13: VecDeque<Tls13ClientSessionValue>,
}

impl Sessions {
    /// A store for an endpoint keeping `connections` connections open.
    pub(crate) fn new(connections: usize) -> Sessions {
        Sessions {
            per_server: connections.saturating_mul(2).clamp(8, MAX_TICKETS),
            servers: Mutex::new(HashMap::new()),
        }
    }

    fn with<T>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut Server) -> T) -> Option<T> {
        let mut servers = self.servers.lock().ok()?;
        servers.get_mut(&name.to_owned()).map(f)
    }

    fn with_new<T>(&self, name: ServerName<'static>, f: impl FnOnce(&mut Server) -> T) {
        if let Ok(mut servers) = self.servers.lock() {
            if !servers.contains_key(&name) && servers.len() >= MAX_SERVERS {
                servers.clear();
            }
            f(servers.entry(name).or_default());
        }
    }
}

impl fmt::Debug for Sessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sessions")
            .field("per_server", &self.per_server)
            .finish_non_exhaustive()
    }
}

impl ClientSessionStore for Sessions {
    fn set_kx_hint(&self, name: ServerName<'static>, group: NamedGroup) {
        self.with_new(name, |s| s.kx_hint = Some(group));
    }

    fn kx_hint(&self, name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(name, |s| s.kx_hint).flatten()
    }

    fn set_tls12_session(&self, name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with_new(name, |s| s.tls12 = Some(value));
    }

    fn tls12_session(&self, name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(name, |s| s.tls12.clone()).flatten()
    }

    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.with(name, |s| s.tls12 = None);
    }

    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        let cap = self.per_server;
        self.with_new(name, |s| {
            if s.tls13.len() >= cap {
                s.tls13.pop_front();
            }
            s.tls13.push_back(value);
        });
    }

    fn take_tls13_ticket(&self, name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        // The newest first: the one least likely to have expired.
        self.with(name, |s| s.tls13.pop_back()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_tickets_for_the_pool() {
        assert_eq!(Sessions::new(0).per_server, 8);
        assert_eq!(Sessions::new(256).per_server, 512);
        assert_eq!(Sessions::new(usize::MAX).per_server, MAX_TICKETS);
    }
}
