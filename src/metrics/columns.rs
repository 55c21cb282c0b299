//! The fold's own state: one compact column per quantity, so a run's metrics need no
//! record kept. Times are exact nanoseconds, held one by one (8 bytes each) while they
//! are few or mostly distinct and as a table of distinct values with their counts once
//! they repeat: the stored times are whole microseconds, so a steady run's values
//! repeat and its columns stop growing once it has met its range (a soak's memory is
//! flat). Token counts are such a table from the start. Inter-token gaps are exact while
//! at most `EXACT_GAPS` are held one by one, then go to an HdrHistogram of 3 significant
//! digits (its percentiles within 0.1% of the value at their rank; mean, stdev, min and
//! max stay exact). Every column reads as a `stats::Distribution`, so one statistic rule
//! serves them all, and every statistic is the same bits whatever order the values came
//! in (a live run's completion order, a merge's row order).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::stats::{quantile_by, Distribution, Moments};

/// Inter-token gaps kept exactly (4 MiB) before the histogram takes over.
pub(crate) const EXACT_GAPS: usize = 1 << 20;

/// Microseconds per millisecond: columns hold microseconds, metrics are milliseconds.
const US_PER_MS: f64 = 1e3;

/// Values held one by one before a time column first looks for repeats.
const FIRST_CHECK: usize = 1 << 16;
/// A column becomes a table when it holds at most one distinct value per this many.
const REPEATS: usize = 8;

/// A time quantity, exact to the nanosecond: every value while they are few or mostly
/// distinct (8 bytes each), a table of distinct values and their counts once they repeat
/// (the stored times are whole microseconds, so a steady run's values repeat, and the
/// table stops growing once the run has met its range). The statistics are the same
/// bits either way: moments from exact integer sums, percentiles from the same values
/// by rank, whatever order the values came in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Times {
    mode: TimesMode,
    n: u64,
    sum_ns: u128,
    sum_sq_ns: u128,
    next_check: usize,
}

#[derive(Debug, Clone)]
enum TimesMode {
    Values(Vec<u64>),
    Table(HashMap<u64, u64>),
}

impl Default for TimesMode {
    fn default() -> Self {
        TimesMode::Values(Vec::new())
    }
}

impl Times {
    pub fn push(&mut self, d: Duration) {
        self.push_n(d, 1);
    }

    /// Adds `k` copies of `d` (the same as `k` pushes).
    pub(crate) fn push_n(&mut self, d: Duration, k: u32) {
        if k == 0 {
            return;
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let k64 = u64::from(k);
        self.n += k64;
        self.sum_ns = self.sum_ns.saturating_add(u128::from(ns) * u128::from(k64));
        self.sum_sq_ns = self
            .sum_sq_ns
            .saturating_add(u128::from(ns) * u128::from(ns) * u128::from(k64));
        match &mut self.mode {
            TimesMode::Table(t) => *t.entry(ns).or_default() += k64,
            TimesMode::Values(v) => {
                v.extend(std::iter::repeat_n(ns, k as usize));
                if v.len() >= self.next_check.max(FIRST_CHECK) {
                    self.next_check = v.len() * 2;
                    self.compress();
                }
            }
        }
    }

    /// Turns the values into a table when they repeat enough.
    fn compress(&mut self) {
        let TimesMode::Values(v) = &self.mode else {
            return;
        };
        let mut table: HashMap<u64, u64> = HashMap::new();
        for &ns in v {
            *table.entry(ns).or_default() += 1;
            if table.len() * REPEATS > v.len() {
                return;
            }
        }
        self.mode = TimesMode::Table(table);
    }

    /// The values by rank, read in milliseconds.
    pub fn sorted(self) -> Ranked {
        let mut ranked = Vec::new();
        match self.mode {
            TimesMode::Values(mut v) => {
                v.sort_unstable();
                let mut end = 0u64;
                for (i, &ns) in v.iter().enumerate() {
                    end += 1;
                    if v.get(i + 1) != Some(&ns) {
                        ranked.push((ns, end));
                    }
                }
            }
            TimesMode::Table(t) => {
                let mut pairs: Vec<(u64, u64)> = t.into_iter().collect();
                pairs.sort_unstable();
                let mut end = 0u64;
                for (ns, c) in pairs {
                    end += c;
                    ranked.push((ns, end));
                }
            }
        }
        Ranked {
            ranked,
            moments: moments_ms(self.n, self.sum_ns, self.sum_sq_ns),
            unit: NS_PER_MS,
        }
    }

    /// Values held one by one (none once the column is a table).
    fn held_values(&self) -> usize {
        match &self.mode {
            TimesMode::Values(v) => v.len(),
            TimesMode::Table(_) => 0,
        }
    }

    /// Every value held one by one, in nanoseconds, leaving the column empty.
    fn take_values(&mut self) -> Vec<u64> {
        match std::mem::take(&mut self.mode) {
            TimesMode::Values(v) => v,
            TimesMode::Table(t) => t
                .into_iter()
                .flat_map(|(ns, c)| std::iter::repeat_n(ns, c as usize))
                .collect(),
        }
    }
}

const NS_PER_MS: f64 = 1e6;

/// The moments in milliseconds of `n` nanosecond values from their exact sums (the same
/// bits whatever order the values were added in).
fn moments_ms(n: u64, sum_ns: u128, sum_sq_ns: u128) -> Moments {
    if n == 0 {
        return Moments::default();
    }
    let count = n as f64;
    let mean = sum_ns as f64 / count;
    let var = (sum_sq_ns as f64 / count - mean * mean).max(0.0);
    Moments {
        n,
        mean: mean / NS_PER_MS,
        m2: var * count / (NS_PER_MS * NS_PER_MS),
    }
}

/// A column read by rank: its distinct values ascending, each with the rank after its
/// last copy, in units of `unit` (nanoseconds per millisecond for times, 1 for counts).
pub(crate) struct Ranked {
    ranked: Vec<(u64, u64)>,
    moments: Moments,
    unit: f64,
}

impl Ranked {
    /// The value of rank `i` (0 = the smallest), in the quantity's unit; NaN past the end.
    pub fn at(&self, i: usize) -> f64 {
        let k = self.ranked.partition_point(|&(_, end)| end <= i as u64);
        self.ranked
            .get(k)
            .map_or(f64::NAN, |&(v, _)| v as f64 / self.unit)
    }
}

impl Distribution for Ranked {
    fn count(&self) -> u64 {
        self.moments.n
    }
    fn moments(&self) -> Moments {
        self.moments
    }
    fn min(&self) -> Option<f64> {
        self.ranked.first().map(|&(v, _)| v as f64 / self.unit)
    }
    fn max(&self) -> Option<f64> {
        self.ranked.last().map(|&(v, _)| v as f64 / self.unit)
    }
    fn quantile(&self, q: f64) -> Option<f64> {
        quantile_by(self.moments.n as usize, |i| self.at(i), q)
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

    /// The values by rank.
    pub(crate) fn ranked(&self) -> Ranked {
        let mut end = 0u64;
        let mut moments = Moments::default();
        let mut ranked = Vec::with_capacity(self.counts.len());
        for (&v, &c) in &self.counts {
            end += c;
            moments.add(f64::from(v), c);
            ranked.push((u64::from(v), end));
        }
        Ranked {
            ranked,
            moments,
            unit: 1.0,
        }
    }
}

/// Inter-token gaps: an exact time column while it holds at most `EXACT_GAPS` values one
/// by one (a table of repeated values has no such limit), then an error-bounded histogram.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gaps {
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
        self.push_n(d, 1);
    }

    /// Adds `k` gaps of `d` each (the same as `k` pushes): a gap of `k` tokens read
    /// per token.
    pub(crate) fn push_n(&mut self, d: Duration, k: u32) {
        if k == 0 {
            return;
        }
        let (ns, k128) = (d.as_nanos(), u128::from(k));
        self.n += u64::from(k);
        self.sum_ns = self.sum_ns.saturating_add(ns.saturating_mul(k128));
        self.sum_sq_ns = self
            .sum_sq_ns
            .saturating_add(ns.saturating_mul(ns).saturating_mul(k128));
        self.min = Some(self.min.map_or(d, |m| m.min(d)));
        self.max = Some(self.max.map_or(d, |m| m.max(d)));
        match &mut self.histogram {
            Some(h) => record(h, d, k),
            None => {
                self.exact.push_n(d, k);
                if self.exact.held_values() > EXACT_GAPS {
                    self.spill();
                }
            }
        }
    }

    /// Moves the exact gaps into a histogram.
    fn spill(&mut self) {
        let Ok(mut h) = Histogram::<u64>::new(3) else {
            return;
        };
        for ns in self.exact.take_values() {
            let _ = h.record(ns / 1_000);
        }
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
        let ms = |d: Duration| d.as_secs_f64() * US_PER_MS;
        GapDistribution {
            body,
            moments: moments_ms(self.n, self.sum_ns, self.sum_sq_ns),
            min: self.min.map(ms),
            max: self.max.map(ms),
        }
    }
}

fn record(h: &mut Histogram<u64>, d: Duration, k: u32) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    // An auto-resizing histogram records any value; should one fail, the gap still
    // counts in the exact moments and extremes.
    let _ = h.record_n(us, u64::from(k));
}

enum GapBody {
    Exact(Ranked),
    Histogram(Histogram<u64>),
}

/// Every gap of a run, ready to be read.
pub(crate) struct GapDistribution {
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
        // 1.2 × EXACT_GAPS distinct gaps (nothing repeats to make a table of), 1 µs .. 1.3 s.
        let n = EXACT_GAPS + EXACT_GAPS / 5;
        for i in 0..n as u64 {
            let us = 1 + (i * 7919) % n as u64;
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
    fn repeated_times_become_a_table_with_the_same_statistics() {
        let mut t = Times::default();
        let mut exact = Vec::new();
        for i in 0..300_000u64 {
            let us = 1_000 + (i * 7919) % 250;
            t.push(Duration::from_micros(us));
            exact.push(us as f64 / 1e3);
        }
        assert!(
            matches!(t.mode, TimesMode::Table(_)),
            "repeats make a table"
        );
        exact.sort_by(f64::total_cmp);
        let d = t.sorted();
        for stat in crate::metrics::names::STATISTICS {
            let (got, want) = (
                statistic_of(&d, stat).unwrap(),
                statistic(&exact, stat).unwrap(),
            );
            assert!(
                (got - want).abs() <= 1e-9 * want.max(1.0),
                "{stat}: {got} vs {want}"
            );
        }
        // Percentiles are read from the values themselves: the same bits.
        assert_eq!(statistic_of(&d, "p90"), statistic(&exact, "p90"));
    }

    #[test]
    fn distinct_times_stay_values() {
        let mut t = Times::default();
        for us in 0..(FIRST_CHECK as u64 * 2) {
            t.push(Duration::from_micros(us));
        }
        assert!(matches!(t.mode, TimesMode::Values(_)));
    }

    #[test]
    fn k_copies_read_as_k_pushes() {
        let (mut one, mut many) = (Gaps::default(), Gaps::default());
        for (us, k) in [(10u64, 3u32), (25, 1), (7, 0), (40, 2)] {
            (0..k).for_each(|_| one.push(Duration::from_micros(us)));
            many.push_n(Duration::from_micros(us), k);
        }
        let (a, b) = (one.finish(), many.finish());
        for stat in crate::metrics::names::STATISTICS {
            assert_eq!(statistic_of(&a, stat), statistic_of(&b, stat), "{stat}");
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
