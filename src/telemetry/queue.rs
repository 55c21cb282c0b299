//! The server's queue as a run sees it while it goes: each scrape's waiting requests
//! (`vllm:num_requests_waiting`, SGLang's queue: the `waiting` family) with the instant it
//! was read. The sampler writes it; an exploring load's level control reads each level's
//! readings (`server_queue = true`). Knows no rule.

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Readings of the server's waiting requests, shared by the sampler and a reader.
#[derive(Debug, Clone, Default)]
pub struct QueueGauge(Arc<Mutex<Vec<(Instant, f64)>>>);

impl QueueGauge {
    /// A reading of `waiting` requests at `at`.
    pub fn push(&self, at: Instant, waiting: f64) {
        if let Ok(mut v) = self.0.lock() {
            v.push((at, waiting));
        }
    }

    /// The readings from `from` on, as (seconds since `from`, waiting); older ones are
    /// forgotten (a reader asks once a level, so the readings kept are one level's).
    pub fn since(&self, from: Instant) -> Vec<(f64, f64)> {
        let Ok(mut v) = self.0.lock() else {
            return Vec::new();
        };
        v.retain(|r| r.0 >= from);
        v.iter()
            .map(|r| (r.0.duration_since(from).as_secs_f64(), r.1))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn readings_since_an_instant() {
        let g = QueueGauge::default();
        let t0 = Instant::now();
        g.push(t0, 1.0);
        g.push(t0 + Duration::from_millis(100), 3.0);
        g.push(t0 + Duration::from_millis(300), 5.0);
        let later = g.since(t0 + Duration::from_millis(100));
        assert_eq!(later.len(), 2);
        assert_eq!(later[0], (0.0, 3.0));
        assert!((later[1].0 - 0.2).abs() < 1e-9);
        assert_eq!(g.since(t0).len(), 2);
    }
}
