//! The `kv_leak` warning of a run whose client aborted requests (the load's `cancel`):
//! the server's running requests and KV-cache usage after the run against their level
//! before it (`telemetry::settle`), said with what stayed up and by how much. Pure.

use std::time::Duration;

use crate::metrics::RunSummary;
use crate::planner::RunSpec;
use crate::telemetry::settle::Settle;
use crate::trust::{Code, RunWarning};
use crate::units::format_duration;

/// The reasons of a run with the load's `cancel`: `kv_leak` when the server's gauges
/// did not settle back; and the requests the client cancelled (and those running before
/// the run) taken off the server's most in flight, which are not another client's.
pub fn reasons(
    run: &RunSpec,
    summary: &RunSummary,
    settle: Option<&Settle>,
    server: Option<&mut crate::trust::ServerCounts>,
) -> Option<RunWarning> {
    let c = run.load.cancel?;
    let cancelled = super::judge::cut_by_stop(summary);
    let held = settle.and_then(|s| s.before.running).unwrap_or(0.0);
    super::judge::allow_in_flight(server, cancelled as f64 + held);
    warning(settle, c.settle, cancelled)
}

/// The run's `kv_leak` warning when the gauges did not settle within `limit`; an
/// `info` note when the server has neither gauge (nothing could be checked).
pub fn warning(settle: Option<&Settle>, limit: Duration, cancelled: u64) -> Option<RunWarning> {
    if cancelled == 0 {
        return None;
    }
    let Some(s) = settle else {
        return Some(RunWarning::new(
            Code::Telemetry,
            "the server's /metrics has no running-requests or KV-cache usage gauge: whether it \
             gave back what the cancelled requests held was not checked",
        ));
    };
    if s.settled {
        return None;
    }
    let mut up = Vec::new();
    if let (Some(now), Some(then)) = (s.after.running, s.before.running) {
        if now > then {
            up.push(format!(
                "{now} requests running against {then} before the run (+{})",
                now - then
            ));
        }
    }
    if let (Some(now), Some(then)) = (s.after.kv_usage, s.before.kv_usage) {
        if now > then + crate::telemetry::settle::KV_TOLERANCE {
            up.push(format!(
                "KV-cache usage {:.2}% against {:.2}% before the run (+{:.2} points)",
                now * 100.0,
                then * 100.0,
                (now - then) * 100.0
            ));
        }
    }
    Some(RunWarning::new(
        Code::KvLeak,
        format!(
            "{}, still {} after the run (`cancel.settle`) whose client cancelled {cancelled} \
             requests: the server may keep aborted requests' KV blocks (a leak the runs after \
             this one pay for); see its log, or raise `cancel.settle` if it is only slow",
            up.join(" and "),
            format_duration(limit)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::settle::Gauges;

    #[test]
    fn says_what_stayed_up_and_by_how_much() {
        let s = Settle {
            before: Gauges {
                running: Some(0.0),
                kv_usage: Some(0.0),
            },
            after: Gauges {
                running: Some(3.0),
                kv_usage: Some(0.0125),
            },
            waited: Duration::from_secs(1),
            settled: false,
        };
        let w = warning(Some(&s), Duration::from_secs(1), 4).unwrap();
        assert_eq!(w.code, Code::KvLeak);
        let text = w.to_string();
        assert!(
            text.contains("3 requests running against 0 before the run (+3)"),
            "{text}"
        );
        assert!(
            text.contains("KV-cache usage 1.25% against 0.00%"),
            "{text}"
        );
        assert!(text.contains("still 1s after the run"), "{text}");
        let settled = Settle { settled: true, ..s };
        assert!(warning(Some(&settled), Duration::from_secs(1), 4).is_none());
        assert!(warning(Some(&s), Duration::from_secs(1), 0).is_none());
        assert_eq!(
            warning(None, Duration::from_secs(1), 4).unwrap().code,
            Code::Telemetry
        );
    }
}
