//! Process limits that bound how many connections one client can hold: the open-file
//! (descriptor) limit, raised to its hard ceiling at startup, and a check that names the
//! limit before a load that would exceed it. Knows nothing about plans.

/// Descriptors kept for things other than connections (database, logs, stdio, sockets
/// of the runtime).
const SPARE_FDS: u64 = 64;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft limit now in
/// force (`None` where the platform has no such limit or it cannot be read).
pub(crate) fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        match rlimit::increase_nofile_limit(u64::MAX) {
            Ok(n) => Some(n),
            Err(_) => rlimit::getrlimit(rlimit::Resource::NOFILE)
                .ok()
                .map(|(soft, _)| soft),
        }
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The soft open-file limit in force, if known.
pub(crate) fn fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rlimit::getrlimit(rlimit::Resource::NOFILE)
            .ok()
            .map(|(soft, _)| soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Local ports available for outgoing connections (Linux), from
/// `/proc/sys/net/ipv4/ip_local_port_range`.
pub(crate) fn local_ports() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(str::parse::<u64>);
    let (lo, hi) = (it.next()?.ok()?, it.next()?.ok()?);
    Some(hi.saturating_sub(lo) + 1)
}

/// Why a load cannot hold `connections` connections on this machine, naming the limit
/// and what to do; `None` when it fits.
pub(crate) fn connection_limit_problem(connections: u64) -> Option<String> {
    if let Some(limit) = fd_limit() {
        if connections.saturating_add(SPARE_FDS) > limit {
            return Some(format!(
                "{connections} connections need about {} file descriptors but the open-file \
                 limit (RLIMIT_NOFILE) is {limit}: raise the hard limit (`ulimit -Hn`, \
                 systemd LimitNOFILE) or lower the concurrency",
                connections.saturating_add(SPARE_FDS)
            ));
        }
    }
    if let Some(ports) = local_ports() {
        if connections > ports {
            return Some(format!(
                "{connections} connections to one server need {connections} local ports but \
                 net.ipv4.ip_local_port_range allows {ports}: widen the range or lower the \
                 concurrency"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_keeps_a_usable_limit() {
        let before = fd_limit();
        let after = raise_fd_limit();
        if let (Some(b), Some(a)) = (before, after) {
            assert!(a >= b);
        }
        assert!(connection_limit_problem(1).is_none());
        let msg = connection_limit_problem(u64::MAX / 4).unwrap();
        assert!(msg.contains("RLIMIT_NOFILE") || msg.contains("ip_local_port_range"));
    }
}
