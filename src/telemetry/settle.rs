//! After a run whose client aborted requests (the load's `cancel`): the server's running
//! requests and KV-cache usage (vLLM's `num_requests_running` and `kv_cache_usage_perc`,
//! or the families `families` maps to them) read before the run and polled after it
//! until both are back at their level before it, within a bound. Facts only: that a
//! level that stayed up is a possible KV leak is the run's warnings' to say.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::families::{KV_CACHE_USAGE, RUNNING};
use super::frame::Frame;
use super::ServerScrape;
use crate::record::facts::{self, SettleFacts};

/// How often the gauges are read again while they settle.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// KV-cache usage (0..1) above its level before the run by no more than this is back:
/// a block or two of another tenant's traffic, or the server's own rounding.
pub(crate) const KV_TOLERANCE: f64 = 0.001;

/// The two gauges of one scrape (every replica's summed); `None` where the server has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Gauges {
    pub running: Option<f64>,
    pub kv_usage: Option<f64>,
}

impl Gauges {
    pub fn of(frame: &Frame) -> Gauges {
        Gauges {
            running: frame.value(RUNNING),
            kv_usage: frame.value(KV_CACHE_USAGE),
        }
    }

    /// Two replicas' gauges together.
    pub fn plus(self, other: Gauges) -> Gauges {
        let both = |a: Option<f64>, b: Option<f64>| Some(a? + b?);
        Gauges {
            running: both(self.running, other.running),
            kv_usage: both(self.kv_usage, other.kv_usage),
        }
    }

    /// Whether neither gauge is above its level in `baseline` (a gauge either side
    /// lacks is not judged).
    pub(crate) fn back_to(&self, baseline: &Gauges) -> bool {
        let running = match (self.running, baseline.running) {
            (Some(now), Some(then)) => now <= then,
            _ => true,
        };
        let kv = match (self.kv_usage, baseline.kv_usage) {
            (Some(now), Some(then)) => now <= then + KV_TOLERANCE,
            _ => true,
        };
        running && kv
    }

    /// Whether the server has either gauge.
    pub fn any(&self) -> bool {
        self.running.is_some() || self.kv_usage.is_some()
    }
}

/// The gauges after a run against their level before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settle {
    pub before: Gauges,
    /// The last reading.
    pub after: Gauges,
    /// How long after the run they were last read.
    pub waited: Duration,
    /// Whether they were back within the bound.
    pub settled: bool,
}

impl Settle {
    /// As kept in the run's facts (`cancel_settle`).
    pub fn facts(&self) -> SettleFacts {
        let gauges = |g: Gauges| facts::Gauges {
            running: g.running,
            kv_usage: g.kv_usage,
        };
        SettleFacts {
            before: gauges(self.before),
            after: gauges(self.after),
            waited_ms: u64::try_from(self.waited.as_millis()).unwrap_or(u64::MAX),
            settled: self.settled,
        }
    }
}

impl ServerScrape {
    /// Reads the gauges until they are back at `before` or `limit` has passed; `None`
    /// when the server has neither gauge.
    pub(crate) async fn gauges_settled(&self, before: Gauges, limit: Duration) -> Option<Settle> {
        if !before.any() {
            return None;
        }
        let start = Instant::now();
        loop {
            let after = self.scrape_all().await.gauges.unwrap_or_default();
            let settled = after.back_to(&before);
            let waited = start.elapsed();
            if settled || waited >= limit {
                return Some(Settle {
                    before,
                    after,
                    waited,
                    settled,
                });
            }
            tokio::time::sleep(POLL_EVERY.min(limit.saturating_sub(waited))).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_its_level_within_the_tolerance_only() {
        let before = Gauges {
            running: Some(0.0),
            kv_usage: Some(0.01),
        };
        let same = Gauges {
            running: Some(0.0),
            kv_usage: Some(0.0105),
        };
        assert!(same.back_to(&before));
        let running = Gauges {
            running: Some(2.0),
            ..same
        };
        assert!(!running.back_to(&before));
        let kv = Gauges {
            kv_usage: Some(0.05),
            ..same
        };
        assert!(!kv.back_to(&before));
        assert!(
            Gauges::default().back_to(&before),
            "nothing read, nothing judged"
        );
    }
}
