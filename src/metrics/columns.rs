//! The fold's own state: one compact column per quantity, so a run's metrics need no
//! record kept. Times are 32-bit floats of microseconds (4 bytes a request; the stored
//! times are whole microseconds, which a 32-bit float holds exactly up to 16.7 s and to
//! 1 part in 16.7 million beyond); token counts are a table of distinct values and
//! their counts (exact, and as small as the lengths are few). Inter-token gaps are kept
//! exactly up to `EXACT_GAPS`, then in an HdrHistogram of 3 significant digits (its
//! percentiles within 0.1% of the value at their rank; mean, stdev, min and max stay
//! exact). Every column reads as a `stats::Distribution`, so one statistic rule serves
//! them all.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::stats::{quantile_by, Distribution, Moments};

/// Inter-token gaps kept exactly (4 MiB) before the histogram takes over.
pub const EXACT_GAPS: usize = 1 << 20;

/// Microseconds per millisecond: columns hold microseconds, metrics are milliseconds.
const US_PER_MS: f64 = 1e3;

/// A time quantity: every value, as 32-bit microseconds.
#[derive(Debug, Clone, Default)]
pub struct Times {
    values: Vec<f32>,
}

impl Times {
    pub fn push(&mut self, d: Duration) {
        self.values.push((d.as_secs_f64() * 1e6) as f32);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values in ascending order, in milliseconds (non-finite ones left out).
    pub fn sorted(mut self) -> SortedTimes {
        self.values.retain(|v| v.is_finite());
        self.values.sort_by(f32::total_cmp);
        self.values.shrink_to_fit();
        SortedTimes(self.values)
    }
}

/// Sorted microseconds read as milliseconds.
pub struct SortedTimes(Vec<f32>);

impl SortedTimes {
    fn ms(&self, i: usize) -> f64 {
        f64::from(self.0[i]) / US_PER_MS
    }

    /// The value of rank `i` (0 = the smallest) in milliseconds; NaN past the end.
    pub fn at_ms(&self, i: usize) -> f64 {
        self.0
            .get(i)
            .map_or(f64::NAN, |&v| f64::from(v) / US_PER_MS)
    }
}

impl Distribution for SortedTimes {
    fn count(&self) -> u64 {
        self.0.len() as u64
    }
    fn moments(&self) -> Moments {
        let n = self.0.len();
        if n == 0 {
            return Moments::default();
        }
        let mean = (0..n).map(|i| self.ms(i)).sum::<f64>() / n as f64;
        let m2 = (0..n).map(|i| (self.ms(i) - mean).powi(2)).sum::<f64>();
        Moments {
            n: n as u64,
            mean,
            m2,
        }
    }
    fn min(&self) -> Option<f64> {
        (!self.0.is_empty()).then(|| self.ms(0))
    }
    fn max(&self) -> Option<f64> {
        (!self.0.is_empty()).then(|| self.ms(self.0.len() - 1))
    }
    fn quantile(&self, q: f64) -> Option<f64> {
        quantile_by(self.0.len(), |i| self.ms(i), q)
    }
}

/// A count quantity (tokens): how many times each value occurred.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    counts: BTreeMap<u32, u64>,
    n: u64,
    sum: u64,
}

impl Counts {
    pub fn push(&mut self, v: u32) {
        *self.counts.entry(v).or_default() += 1;
        self.n += 1;
        self.sum += u64::from(v);
    }

    /// The sum of the values; `None` when there are none.
    pub fn sum(&self) -> Option<f64> {
        (self.n > 0).then_some(self.sum as f64)
    }

    /// The values by rank: distinct values with the rank after their last copy.
    pub fn ranked(&self) -> RankedCounts {
        let mut end = 0u64;
        let mut moments = Moments::default();
        let mut table = Vec::with_capacity(self.counts.len());
        for (&v, &c) in &self.counts {
            end += c;
            moments.add(f64::from(v), c);
            table.push((v, end));
        }
        RankedCounts { table, moments }
    }
}

/// `Counts` ready to be read by rank.
pub struct RankedCounts {
    /// (value, one past the rank of its last copy), ascending.
    table: Vec<(u32, u64)>,
    moments: Moments,
}

impl RankedCounts {
    fn at(&self, rank: usize) -> f64 {
        let i = self.table.partition_point(|&(_, end)| end <= rank as u64);
        self.table
            .get(i)
            .or(self.table.last())
            .map_or(f64::NAN, |&(v, _)| f64::from(v))
    }
}

impl Distribution for RankedCounts {
    fn count(&self) -> u64 {
        self.moments.n
    }
    fn moments(&self) -> Moments {
        self.moments
    }
    fn min(&self) -> Option<f64> {
        self.table.first().map(|&(v, _)| f64::from(v))
    }
    fn max(&self) -> Option<f64> {
        self.table.last().map(|&(v, _)| f64::from(v))
    }
    fn quantile(&self, q: f64) -> Option<f64> {
        quantile_by(self.moments.n as usize, |i| self.at(i), q)
    }
}

/// Inter-token gaps: exact up to `EXACT_GAPS`, then an error-bounded histogram.
#[derive(Debug, Clone, Default)]
pub struct Gaps {
    exact: Times,
    histogram: Option<Histogram<u64>>,
    /// Exact sums of every gap and of its square, in nanoseconds: moments that do not
    /// depend on the order the gaps arrive in (a live run's completion order, a merge's
    /// row order), so every path gets the same bits.
    n: u64,
    sum_ns: u128,
    sum_sq_ns: u128,
    min: Option<Duration>,
    max: Option<Duration>,
}

impl Gaps {
    pub fn push(&mut self, d: Duration) {
        let ns = d.as_nanos();
        self.n += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.sum_sq_ns = self.sum_sq_ns.saturating_add(ns.saturating_mul(ns));
        self.min = Some(self.min.map_or(d, |m| m.min(d)));
        self.max = Some(self.max.map_or(d, |m| m.max(d)));
        match &mut self.histogram {
            Some(h) => record(h, d),
            None if self.exact.len() < EXACT_GAPS => self.exact.push(d),
            None => self.spill(d),
        }
    }

    /// Moves the exact gaps into a histogram and records `d` there.
    fn spill(&mut self, d: Duration) {
        let Ok(mut h) = Histogram::<u64>::new(3) else {
            return;
        };
        for &us in &std::mem::take(&mut self.exact).values {
            let _ = h.record(us.max(0.0) as u64);
        }
        record(&mut h, d);
        self.histogram = Some(h);
    }

    /// Whether the percentiles are the histogram's (bounded error) rather than exact.
    pub fn bounded(&self) -> bool {
        self.histogram.is_some()
    }

    pub fn finish(self) -> GapDistribution {
        let body = match self.histogram {
            Some(h) => GapBody::Histogram(h),
            None => GapBody::Exact(self.exact.sorted()),
        };
        let n = self.n as f64;
        let ns_per_ms = 1e6;
        let moments = if self.n == 0 {
            Moments::default()
        } else {
            let mean = self.sum_ns as f64 / n;
            let var = (self.sum_sq_ns as f64 / n - mean * mean).max(0.0);
            Moments {
                n: self.n,
                mean: mean / ns_per_ms,
                m2: var * n / (ns_per_ms * ns_per_ms),
            }
        };
        let ms = |d: Duration| d.as_secs_f64() * US_PER_MS;
        GapDistribution {
            body,
            moments,
            min: self.min.map(ms),
            max: self.max.map(ms),
        }
    }
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    // An auto-resizing histogram records any value; should one fail, the gap still
    // counts in the exact moments and extremes.
    let _ = h.record(us);
}

enum GapBody {
    Exact(SortedTimes),
    Histogram(Histogram<u64>),
}

/// Every gap of a run, ready to be read.
pub struct GapDistribution {
    body: GapBody,
    moments: Moments,
    min: Option<f64>,
    max: Option<f64>,
}

impl Distribution for GapDistribution {
    fn count(&self) -> u64 {
        self.moments.n
    }
    fn moments(&self) -> Moments {
        self.moments
    }
    fn min(&self) -> Option<f64> {
        self.min
    }
    fn max(&self) -> Option<f64> {
        self.max
    }
    fn quantile(&self, q: f64) -> Option<f64> {
        match &self.body {
            GapBody::Exact(t) => t.quantile(q),
            GapBody::Histogram(h) => {
                let us = h.median_equivalent(h.value_at_quantile(q.clamp(0.0, 1.0)));
                let ms = us as f64 / US_PER_MS;
                Some(ms.clamp(self.min?, self.max?))
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::metrics::stats::{statistic, statistic_of};

    #[test]
    fn counts_read_like_the_sorted_values() {
        let values = [5u32, 1, 3, 3, 9, 1, 1, 7];
        let mut c = Counts::default();
        values.iter().for_each(|&v| c.push(v));
        let mut sorted: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
        sorted.sort_by(f64::total_cmp);
        let ranked = c.ranked();
        for stat in crate::metrics::names::STATISTICS {
            let (a, b) = (statistic_of(&ranked, stat), statistic(&sorted, stat));
            assert!(
                (a.unwrap() - b.unwrap()).abs() < 1e-9,
                "{stat}: {a:?} vs {b:?}"
            );
        }
        assert_eq!(c.sum(), Some(30.0));
        assert_eq!(Counts::default().sum(), None);
    }

    #[test]
    fn times_are_exact_microseconds_read_as_milliseconds() {
        let mut t = Times::default();
        for us in [1_500u64, 250, 16_000_000, 3] {
            t.push(Duration::from_micros(us));
        }
        let s = t.sorted();
        assert_eq!(s.min(), Some(0.003));
        assert_eq!(s.max(), Some(16_000.0));
        assert_eq!(s.quantile(0.5), Some((0.25 + 1.5) / 2.0));
    }

    #[test]
    fn gaps_beyond_the_exact_bound_stay_within_a_tenth_of_a_percent() {
        let mut g = Gaps::default();
        let mut exact = Vec::new();
        // 1.2 × EXACT_GAPS gaps spread over 1 µs .. 60 ms.
        let n = EXACT_GAPS + EXACT_GAPS / 5;
        for i in 0..n as u64 {
            let us = 1 + (i * 7919) % 60_000;
            g.push(Duration::from_micros(us));
            exact.push(us as f64 / 1e3);
        }
        assert!(g.bounded());
        exact.sort_by(f64::total_cmp);
        let d = g.finish();
        for stat in ["p1", "p10", "p50", "p90", "p99", "p999"] {
            let (got, want) = (
                statistic_of(&d, stat).unwrap(),
                statistic(&exact, stat).unwrap(),
            );
            assert!(
                (got - want).abs() <= want * 1e-3 + 1e-3,
                "{stat}: {got} vs {want}"
            );
        }
        for stat in ["mean", "stdev", "min", "max"] {
            let (got, want) = (
                statistic_of(&d, stat).unwrap(),
                statistic(&exact, stat).unwrap(),
            );
            assert!((got - want).abs() <= want * 1e-9, "{stat}: {got} vs {want}");
        }
    }

    #[test]
    fn few_gaps_are_exact() {
        let mut g = Gaps::default();
        for us in [10u64, 20, 40] {
            g.push(Duration::from_micros(us));
        }
        assert!(!g.bounded());
        let d = g.finish();
        assert_eq!(statistic_of(&d, "p50"), Some(0.02));
        assert_eq!(statistic_of(&d, "p25"), Some(0.015));
    }
}
