//! The TTFT p50 of a progress line: a fixed log-bucket histogram of atomics (1,024
//! buckets, 8 KiB a run), so the engine's sink records a request with one relaxed
//! `fetch_add` and no lock, and the timer reads it from its own thread. Buckets are 16
//! per power of two of microseconds (each 1/16 of its octave wide), and a quantile reads
//! as its bucket's midpoint: within 3.2% of the exact value, which the run's stored
//! metrics give once it ends (`stats`' rule); this is a live estimate only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Sub-buckets per power of two.
const SUB: u32 = 16;
const SUB_BITS: u32 = 4;
const BUCKETS: usize = 1024;

/// TTFTs seen so far, by bucket.
#[derive(Debug)]
pub(crate) struct TtftHistogram {
    counts: Box<[AtomicU64]>,
}

impl Default for TtftHistogram {
    fn default() -> Self {
        TtftHistogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// The bucket of `us` microseconds.
fn bucket(us: u64) -> usize {
    if us < u64::from(SUB) {
        return us as usize;
    }
    let exp = 63 - us.leading_zeros();
    let sub = (us >> (exp - SUB_BITS)) & u64::from(SUB - 1);
    (((exp - SUB_BITS + 1) * SUB) as usize + sub as usize).min(BUCKETS - 1)
}

/// The midpoint of bucket `i`, in microseconds.
fn midpoint(i: usize) -> f64 {
    if i < SUB as usize {
        return i as f64;
    }
    let exp = (i / SUB as usize) as u32 + SUB_BITS - 1;
    let sub = (i % SUB as usize) as u64;
    let step = 1u64 << (exp - SUB_BITS);
    let low = (u64::from(SUB) + sub) << (exp - SUB_BITS);
    low as f64 + step as f64 / 2.0
}

impl TtftHistogram {
    pub fn record(&self, ttft: Duration) {
        let us = u64::try_from(ttft.as_micros()).unwrap_or(u64::MAX);
        self.counts[bucket(us)].fetch_add(1, Ordering::Relaxed);
    }

    /// The median so far, in milliseconds; `None` before the first TTFT.
    pub(crate) fn p50_ms(&self) -> Option<f64> {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let n: u64 = counts.iter().sum();
        let rank = n.div_ceil(2).max(1);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if n > 0 && seen >= rank {
                return Some(midpoint(i) / 1e3);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_values_within_their_width() {
        for us in [
            0u64,
            7,
            15,
            16,
            17,
            100,
            999,
            40_000,
            1_234_567,
            3_600_000_000,
        ] {
            let mid = midpoint(bucket(us));
            let err = (mid - us as f64).abs() / (us as f64).max(1.0);
            assert!(err <= 1.0 / 32.0 + 1e-9 || us < 16, "{us}: {mid}");
        }
        assert!(bucket(u64::MAX) < BUCKETS);
    }

    #[test]
    fn the_median_is_the_middle_ttft() {
        let h = TtftHistogram::default();
        assert_eq!(h.p50_ms(), None);
        for ms in [10u64, 20, 40, 41, 900] {
            h.record(Duration::from_millis(ms));
        }
        let p50 = h.p50_ms().unwrap();
        assert!((p50 - 40.0).abs() <= 40.0 / 32.0, "{p50}");
    }
}
