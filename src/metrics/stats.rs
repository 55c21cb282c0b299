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
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// One statistic of `STATISTICS` over sorted values (`mean` and `stdev` read them in any
/// order); `None` when there are none or `name` is not a statistic.
pub fn statistic(sorted: &[f64], name: &str) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as f64;
    let mean = sorted.iter().sum::<f64>() / n;
    match name {
        "mean" => Some(mean),
        "stdev" => Some((sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt()),
        "min" => sorted.first().copied(),
        "max" => sorted.last().copied(),
        "p999" => percentile(sorted, 99.9),
        other => other
            .strip_prefix('p')
            .and_then(|p| p.parse::<f64>().ok())
            .and_then(|p| percentile(sorted, p)),
    }
}

/// Sorts `values` and writes `<quantity>_<statistic>` for every statistic (`None` when empty).
pub fn fill(out: &mut BTreeMap<String, Option<f64>>, quantity: &str, mut values: Vec<f64>) {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    for stat in STATISTICS {
        out.insert(format!("{quantity}_{stat}"), statistic(&values, stat));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
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
}
