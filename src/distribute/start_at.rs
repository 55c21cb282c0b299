//! When a shard starts a run's load: `run --start-at TIME` (the wall-clock instant at
//! which every shard starts the load of its first run) and the start barrier's instant
//! of every run ([`Start`]). Owns reading the instant (RFC 3339, or unix seconds) and
//! waiting for it to within a fraction of a millisecond; knows nothing about plans or HTTP.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::record::facts::BarrierFacts;

use super::barrier::{BarrierError, StartBarrier};

/// Why `--start-at` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --start-at `{text}`: {reason}")]
pub(crate) struct StartAtError {
    pub text: String,
    pub reason: &'static str,
}

/// Reads `2026-11-29T12:00:00Z` (RFC 3339, any offset, optional fraction) or a number of
/// unix seconds (`1795953600`, `1795953600.5`).
pub(crate) fn parse_start_at(text: &str) -> Result<SystemTime, StartAtError> {
    let bad = |reason| StartAtError {
        text: text.to_string(),
        reason,
    };
    let t = text.trim();
    if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t.parse().map_err(|_| bad("not a number of unix seconds"))?;
        return Duration::try_from_secs_f64(secs)
            .map(|d| UNIX_EPOCH + d)
            .map_err(|_| bad("unix seconds out of range"));
    }
    rfc3339(t)
        .ok_or_else(|| bad("write an RFC 3339 time like 2026-11-29T12:00:00Z, or unix seconds"))
}

/// An RFC 3339 text as a time (see `units::parse_utc_us`); `None` before 1970.
fn rfc3339(t: &str) -> Option<SystemTime> {
    let us = u64::try_from(crate::units::parse_utc_us(t)?).ok()?;
    Some(UNIX_EPOCH + Duration::from_micros(us))
}

/// The timer's granularity: the last stretch before an instant is spun, not slept.
const SPIN: Duration = Duration::from_millis(2);

/// Sleeps until `at` (the timer to within [`SPIN`] of it, then a spin on the clock, so
/// shards start within tens of microseconds of the instant, not the timer's millisecond);
/// a warning when `at` has already passed (the load starts at once).
pub(crate) async fn wait_until(at: SystemTime) -> Option<String> {
    match at.duration_since(SystemTime::now()) {
        Ok(wait) => {
            if wait > SPIN {
                tokio::time::sleep(wait - SPIN).await;
            }
            // Yielding, so shards sharing a machine's cores do not starve each other.
            while SystemTime::now() < at {
                std::thread::yield_now();
            }
            None
        }
        Err(late) => Some(format!(
            "the start instant was {:.1} s ago; starting at once",
            late.duration().as_secs_f64()
        )),
    }
}

/// Why a run could not start: the start barrier of run `run` failed.
#[derive(Debug, thiserror::Error)]
#[error("run {run}: the start barrier")]
pub struct StartError {
    pub run: String,
    #[source]
    pub source: BarrierError,
}

/// A run's meeting at the start barrier: the barrier, the run, and where the meeting's
/// facts go (`Some` once this shard has met the others at this run).
pub struct Meet<'a> {
    pub barrier: &'a dyn StartBarrier,
    pub run: &'a str,
    pub facts: &'a RefCell<Option<BarrierFacts>>,
}

/// When a run's load starts: at `--start-at` (the first run), at the instant the start
/// barrier announces (every run of a shard with a barrier), the later of the two when
/// both are given, each plus the shard's lead (its first arrival's offset in the run's
/// one arrival sequence); `None` of both starts at once.
pub struct Start<'a> {
    pub at: Option<SystemTime>,
    pub meet: Option<Meet<'a>>,
    pub lead: Duration,
}

impl Start<'_> {
    /// Whether the load starts at once (no instant to wait for, no barrier to meet).
    pub(crate) fn is_now(&self) -> bool {
        self.at.is_none() && self.meet.is_none() && self.lead.is_zero()
    }

    /// Meets the barrier (if any), then waits for the start; a warning when the instant
    /// was already past.
    pub async fn wait(&self) -> Result<Option<String>, StartError> {
        let mut at = self.at;
        if let Some(m) = &self.meet {
            let meeting = m.barrier.meet(m.run).await.map_err(|source| StartError {
                run: m.run.to_string(),
                source,
            })?;
            *m.facts.borrow_mut() = Some(meeting.facts);
            at = Some(at.map_or(meeting.start, |a| a.max(meeting.start)));
        }
        let at = match at {
            Some(at) => at + self.lead,
            None if self.lead.is_zero() => return Ok(None),
            None => SystemTime::now() + self.lead,
        };
        Ok(wait_until(at).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(t: SystemTime) -> f64 {
        t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    }

    #[test]
    fn reads_rfc3339_and_unix_seconds() {
        let z = parse_start_at("2026-11-29T12:00:00Z").unwrap();
        assert_eq!(unix(z), 1_795_953_600.0);
        assert_eq!(unix(parse_start_at("1795953600").unwrap()), 1_795_953_600.0);
        assert_eq!(
            unix(parse_start_at("2026-11-29T13:00:00+01:00").unwrap()),
            1_795_953_600.0
        );
        assert_eq!(
            unix(parse_start_at("2026-11-29T12:00:00.250Z").unwrap()),
            1_795_953_600.25
        );
        assert_eq!(unix(parse_start_at("1970-01-01T00:00:00Z").unwrap()), 0.0);
        assert_eq!(
            unix(parse_start_at("2000-03-01T00:00:00Z").unwrap()),
            951_868_800.0
        );
        for bad in [
            "tomorrow",
            "2026-13-01T00:00:00Z",
            "2026-11-29T12:00Z",
            "",
            "12:00",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_past_instant_warns_and_does_not_wait() {
        let w = wait_until(UNIX_EPOCH).await.unwrap();
        assert!(w.contains("starting at once"), "{w}");
        let soon = SystemTime::now() + Duration::from_millis(30);
        assert!(wait_until(soon).await.is_none());
        assert!(SystemTime::now() >= soon);
    }
}
