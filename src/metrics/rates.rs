//! `Rates`: the column of a per-request rate (`request_output_tps`, `decode_tps`), a
//! time column (`columns::Times`) of exact integers underneath, so a rate's statistics
//! follow the same rules and bounds as a time's.

use std::time::Duration;

use super::columns::{Ranked, Times};

/// A rate quantity (tokens per second), held like a time column: each rate rounded to
/// a whole micro-token per second (an exact integer, so the statistics are the same bits
/// whatever order the rates came in) and read back in tokens per second.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rates(Times);

/// Micro-tokens per second in a token per second: a `Times` reads its nanoseconds as
/// milliseconds (a factor of 1e6), so its ranks read straight in tokens per second.
const MICRO: f64 = 1e6;

impl Rates {
    /// Adds one rate; a rate that is not finite or negative is not one.
    pub fn push(&mut self, per_s: f64) {
        if per_s.is_finite() && per_s >= 0.0 {
            let micro = (per_s * MICRO).round().min(u64::MAX as f64) as u64;
            self.0.push(Duration::from_nanos(micro));
        }
    }

    /// The rates by rank, read in tokens per second.
    pub fn sorted(self) -> Ranked {
        self.0.sorted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::stats::{statistic_of, Distribution};

    #[test]
    fn rates_read_in_tokens_per_second() {
        let mut r = Rates::default();
        for x in [12.5, 40.0, 0.000_001, f64::NAN, -1.0, f64::INFINITY] {
            r.push(x);
        }
        let d = r.sorted();
        assert_eq!(
            d.count(),
            3,
            "NaN, negative and infinite rates are not rates"
        );
        assert_eq!(d.min(), Some(0.000_001));
        assert_eq!(d.max(), Some(40.0));
        assert_eq!(d.quantile(0.5), Some(12.5));
        assert!((statistic_of(&d, "mean").unwrap() - 52.500_001 / 3.0).abs() < 1e-9);
    }
}
