//! New connections while a run measured: its connections were opened before its clock,
//! yet its measured requests opened more.

use crate::metrics::RunSummary;
use crate::planner::{self, RunSpec};

/// A closed loop whose connections were opened before the clock, yet whose measured
/// requests opened more: the server closed kept-alive connections (or one failed). How
/// many, how long they took, and how many TLS handshakes resumed a session. (An
/// exploring load opens its connections as it grows: not judged.)
pub fn reconnects(run: &RunSpec, preconnected: bool, summary: &RunSummary) -> Option<String> {
    let closed = matches!(
        run.load.mode,
        planner::Load::Closed { .. } | planner::Load::ClosedRamp { .. }
    );
    let c = summary.connections;
    // A request the client aborts (the load's `cancel`) drops its connection: the next
    // one opens another, by the plan, not by the server.
    if !closed || !preconnected || c.opened == 0 || run.load.cancel.is_some() {
        return None;
    }
    let value = |k: &str| summary.values.get(k).copied().flatten().unwrap_or(0.0);
    let tls = match c.tls_handshakes {
        0 => String::new(),
        n => format!(
            "; TLS handshakes {} resumed of {n}, mean {:.1} ms (tls_handshake_*)",
            c.tls_resumed,
            value("tls_handshake_mean")
        ),
    };
    Some(format!(
        "{} measured requests opened a new connection although the run's connections were opened before its clock: the server closed kept-alive connections (a keep-alive timeout or a request limit per connection); their setup took {:.1} ms on average, {:.1} ms at most (connect_*), kept out of TTFT{tls}",
        c.opened,
        value("connect_mean"),
        value("connect_max"),
    ))
}
