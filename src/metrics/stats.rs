//! Exact distribution statistics from all values: percentiles by linear interpolation
//! between closest ranks (numpy's default), mean, population standard deviation. The
//! one copy of these rules: run metrics, merges, search pools and `compare`'s bootstrap
//! (`report::bootstrap`) all call them.
//!
//! `stdev` is the population standard deviation, √(Σ(x − mean)² / n), as numpy's
//! `np.std` (ddof = 0) and vLLM's benchmark report it: 0 for a single value, unknown
//! (`None`) for none. DESIGN's "Metrics" names the statistic and not its divisor, so
//! perfplan follows numpy, which its percentiles already follow.

use std::collections::BTreeMap;

use super::names::STATISTICS;

/// The `p`-th percentile (0..=100) of sorted values; `None` when empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    quantile(sorted, p / 100.0)
}

/// The `q`-quantile (0..=1) of sorted values, by linear interpolation between the two
/// closest ranks; `None` when empty.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    quantile_by(sorted.len(), |i| sorted[i], q)
}

/// The `q`-quantile of `n` values in ascending order read by rank with `at` (an array,
/// or a table of counts): the one interpolation rule of every exact percentile.
pub(crate) fn quantile_by(n: usize, at: impl Fn(usize) -> f64, q: f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    let low = at(lo);
    Some(low + (at(hi) - low) * frac)
}

/// Count, mean and Σ(x − mean)² of a set of values: what `mean` and `stdev` are made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Moments {
    pub n: u64,
    pub mean: f64,
    pub m2: f64,
}

impl Moments {
    /// The moments of `values`, in two passes (mean first), as numpy computes them.
    pub fn of(values: &[f64]) -> Moments {
        if values.is_empty() {
            return Moments::default();
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let m2 = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        Moments {
            n: values.len() as u64,
            mean,
            m2,
        }
    }

    /// Adds `count` copies of `x` (Welford's update, merged for a block of equal values).
    pub fn add(&mut self, x: f64, count: u64) {
        if count == 0 {
            return;
        }
        let (n0, c) = (self.n as f64, count as f64);
        let n = n0 + c;
        let delta = x - self.mean;
        self.mean += delta * c / n;
        self.m2 += delta * delta * n0 * c / n;
        self.n += count;
    }

    /// The population standard deviation √(Σ(x − mean)² / n); `None` for no values.
    pub(crate) fn stdev(&self) -> Option<f64> {
        (self.n > 0).then(|| (self.m2 / self.n as f64).max(0.0).sqrt())
    }
}

/// How a statistic reads a distribution: its moments, its extremes and its quantiles.
pub(crate) trait Distribution {
    /// Values held.
    fn count(&self) -> u64;
    /// Their moments (read for `mean` and `stdev` only).
    fn moments(&self) -> Moments;
    fn min(&self) -> Option<f64>;
    fn max(&self) -> Option<f64>;
    fn quantile(&self, q: f64) -> Option<f64>;
}

/// One statistic of `STATISTICS` (`mean`, `stdev`, `min`, `max`, `p1` … `p999`) of `d`;
/// `None` when it holds no value or `name` is not a statistic.
pub(crate) fn statistic_of(d: &impl Distribution, name: &str) -> Option<f64> {
    if d.count() == 0 {
        return None;
    }
    match name {
        "mean" => Some(d.moments().mean),
        "stdev" => d.moments().stdev(),
        "min" => d.min(),
        "max" => d.max(),
        "p999" => d.quantile(0.999),
        other => other
            .strip_prefix('p')
            .and_then(|p| p.parse::<f64>().ok())
            .and_then(|p| d.quantile(p / 100.0)),
    }
}

/// Sorted values as a distribution.
struct Sorted<'a>(&'a [f64]);

impl Distribution for Sorted<'_> {
    fn count(&self) -> u64 {
        self.0.len() as u64
    }
    fn moments(&self) -> Moments {
        Moments::of(self.0)
    }
    fn min(&self) -> Option<f64> {
        self.0.first().copied()
    }
    fn max(&self) -> Option<f64> {
        self.0.last().copied()
    }
    fn quantile(&self, q: f64) -> Option<f64> {
        quantile(self.0, q)
    }
}

/// One statistic of `STATISTICS` over sorted values (`mean` and `stdev` read them in any
/// order); `None` when there are none or `name` is not a statistic.
pub fn statistic(sorted: &[f64], name: &str) -> Option<f64> {
    statistic_of(&Sorted(sorted), name)
}

/// Writes `<quantity>_<statistic>` of `d` for every statistic (`None` when it is empty).
pub(crate) fn fill_from(
    out: &mut BTreeMap<String, Option<f64>>,
    quantity: &str,
    d: &impl Distribution,
) {
    for stat in STATISTICS {
        out.insert(format!("{quantity}_{stat}"), statistic_of(d, stat));
    }
}

/// Sorts `values` and writes `<quantity>_<statistic>` for every statistic (`None` when empty).
pub fn fill(out: &mut BTreeMap<String, Option<f64>>, quantity: &str, mut values: Vec<f64>) {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    fill_from(out, quantity, &Sorted(&values));
}

/// The `q` quantile (0..=1) of a histogram given as cumulative buckets `(le, count)` in
/// increasing `le` (the last `+Inf`), Prometheus's `histogram_quantile` rule: the bucket
/// holding rank `q * total`, linearly interpolated between its lower bound (the previous
/// `le`, 0 for the first) and its `le`; a rank in the `+Inf` bucket gives the highest
/// finite `le`. `None` without observations or when counts decrease.
pub(crate) fn histogram_quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 || buckets.windows(2).any(|w| w[1].1 < w[0].1) {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * total;
    let (mut lower, mut below) = (0.0, 0.0);
    for &(le, cum) in buckets {
        if cum >= rank && cum > below {
            if le.is_infinite() {
                return Some(lower);
            }
            return Some(lower + (le - lower) * (rank - below) / (cum - below));
        }
        if le.is_finite() {
            lower = le;
        }
        below = cum;
    }
    Some(lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], [0, 25, 50, 90, 99.9, 100]) = 1, 1.75, 2.5, 3.7, 3.997, 4
        let v = [1.0, 2.0, 3.0, 4.0];
        let want = [
            (0.0, 1.0),
            (25.0, 1.75),
            (50.0, 2.5),
            (90.0, 3.7),
            (99.9, 3.997),
            (100.0, 4.0),
        ];
        for (p, w) in want {
            assert!((percentile(&v, p).unwrap() - w).abs() < 1e-12, "p{p}");
        }
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn mean_and_population_stdev() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(statistic(&v, "mean"), Some(5.0));
        assert_eq!(statistic(&v, "stdev"), Some(2.0));
        assert_eq!(statistic(&v, "p1"), Some(2.0 + 2.0 * 0.07));
    }

    #[test]
    fn stdev_of_one_value_is_zero_and_of_none_unknown() {
        // numpy.std([7.0]) == 0.0 (ddof = 0, as vLLM's benchmark reports it).
        assert_eq!(statistic(&[7.0], "stdev"), Some(0.0));
        assert_eq!(statistic(&[], "stdev"), None);
        assert_eq!(statistic(&[1.0, 3.0], "stdev"), Some(1.0));
    }

    #[test]
    fn quantiles_are_percentiles_over_a_hundred() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert!((quantile(&v, 0.99).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(quantile(&v, -1.0), Some(1.0));
        assert_eq!(quantile(&v, 2.0), Some(4.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn fill_writes_every_statistic() {
        let mut m = BTreeMap::new();
        fill(&mut m, "ttft", vec![3.0, 1.0, 2.0]);
        assert_eq!(m.len(), STATISTICS.len());
        assert_eq!(m["ttft_p50"], Some(2.0));
        assert_eq!(m["ttft_min"], Some(1.0));
        fill(&mut m, "itl", vec![]);
        assert_eq!(m["itl_max"], None);
    }

    #[test]
    fn histogram_quantile_interpolates_within_a_bucket() {
        // 10 observations: 2 in (0, 0.1], 6 in (0.1, 0.5], 2 in (0.5, +Inf).
        let b = [(0.1, 2.0), (0.5, 8.0), (f64::INFINITY, 10.0)];
        assert_eq!(histogram_quantile(&b, 0.1), Some(0.05));
        // rank 5: 3 of the bucket's 6, halfway through (0.1, 0.5].
        let p50 = histogram_quantile(&b, 0.5).unwrap_or(f64::NAN);
        assert!((p50 - 0.3).abs() < 1e-12);
        // rank 9.9 lies in +Inf: the highest finite bound.
        assert_eq!(histogram_quantile(&b, 0.99), Some(0.5));
        assert_eq!(
            histogram_quantile(&[(0.1, 0.0), (f64::INFINITY, 0.0)], 0.5),
            None
        );
        assert_eq!(
            histogram_quantile(&[(0.1, 3.0), (f64::INFINITY, 2.0)], 0.5),
            None
        );
        assert_eq!(histogram_quantile(&[], 0.5), None);
    }
}
