//! `compare`'s noise rule for goodput and capacity: `slo_attainment` from resampled
//! measured requests (failed ones never good), and the metrics that are a fixed multiple
//! of a throughput of the same run (per user, per accelerator) or its inverse (cost per
//! million tokens) from that throughput's resamples, scaled by the run's own factor as
//! its stored metrics give it (so two runs at different prices compare at their own).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::bootstrap::{throughput, Counted, Estimator, Sample};
use crate::metrics::Slo;
use crate::store::StoredRun;

/// `(metric, the throughput it scales, whether it is the inverse)`.
const SCALED: [(&str, Counted, bool); 5] = [
    ("output_tps_per_user", Counted::OutputTokens, false),
    ("output_tps_per_accelerator", Counted::OutputTokens, false),
    (
        "cost_per_million_output_tokens",
        Counted::OutputTokens,
        true,
    ),
    ("cost_per_million_total_tokens", Counted::TotalTokens, true),
    (
        "cost_per_million_good_output_tokens",
        Counted::GoodOutputTokens,
        true,
    ),
];

fn throughput_metric(counted: Counted) -> &'static str {
    match counted {
        Counted::Requests => "rps",
        Counted::OutputTokens => "output_tps",
        Counted::TotalTokens => "total_tps",
        Counted::GoodRequests => "goodput_rps",
        Counted::GoodOutputTokens => "goodput_tokens_per_s",
    }
}

/// Each scaled metric's factor in `run`: metric / throughput, or metric × throughput
/// for an inverse (none where either is unknown or the throughput is 0).
pub fn factors(run: &StoredRun) -> Vec<(&'static str, f64)> {
    let value = |name: &str| run.metrics.get(name).copied().flatten();
    SCALED
        .iter()
        .filter_map(|&(metric, counted, inverse)| {
            let v = value(metric)?;
            let base = value(throughput_metric(counted)).filter(|b| *b > 0.0)?;
            Some((metric, if inverse { v * base } else { v / base }))
        })
        .collect()
}

/// The suite's stored `[slo]` as objectives (entries that no longer read are left out).
pub(crate) fn slos_of(slo: &Value) -> Vec<Slo> {
    slo.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(quantity, text)| Slo::parse(quantity, text.as_str()?).ok())
        .collect()
}

/// The estimator of a goodput or capacity metric (`None` for any other).
pub(crate) fn estimator(metric: &str) -> Option<Estimator> {
    if metric == "slo_attainment" {
        return Some(Box::new(attainment));
    }
    let &(name, counted, inverse) = SCALED.iter().find(|(m, _, _)| *m == metric)?;
    Some(Box::new(move |s: &Sample, rng: &mut ChaCha8Rng| {
        let k = s.factors.iter().find(|(m, _)| *m == name)?.1;
        let x = throughput(s, rng, counted)?;
        if inverse {
            (x > 0.0).then(|| k / x)
        } else {
            Some(k * x)
        }
    }))
}

/// The good share of one resample of the measured requests, failed ones included.
fn attainment(s: &Sample, rng: &mut ChaCha8Rng) -> Option<f64> {
    let ok = s.requests.len();
    let n = ok + s.failed;
    if n < 2 {
        return None;
    }
    let good = (0..n)
        .filter(|_| {
            let i = rng.gen_range(0..n);
            i < ok && s.good.get(i).copied().unwrap_or(true)
        })
        .count();
    Some(good as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::super::bootstrap::{diff_interval, supports, BootstrapOptions};
    use super::*;

    fn sample(good_share: f64, n: usize, cost: f64) -> Sample {
        let good_n = (n as f64 * good_share) as usize;
        let mut s = Sample {
            duration_s: 10.0,
            ..Sample::default()
        };
        for i in 0..n {
            s.requests.push((1.0 + (i % 7) as f64 * 0.01, 100.0, 200.0));
            s.good.push(i < good_n);
        }
        // 100 requests of 100 tokens in 10 s: 1,000 tok/s; a cost of `cost` a million.
        s.factors = vec![
            ("cost_per_million_output_tokens", cost * 1000.0),
            ("output_tps_per_accelerator", 1.0 / 8.0),
        ];
        s
    }

    #[test]
    fn attainment_and_cost_are_judged_by_resamples() {
        let opts = BootstrapOptions {
            resamples: 300,
            ..BootstrapOptions::default()
        };
        for m in [
            "slo_attainment",
            "goodput_rps",
            "goodput_tokens_per_s",
            "cost_per_million_output_tokens",
            "output_tps_per_user",
        ] {
            assert!(supports(m), "{m}");
        }
        assert!(!supports("good_requests"));
        let (base, worse) = (sample(0.98, 100, 5.0), sample(0.6, 100, 5.0));
        let drop = diff_interval(&base, &worse, "slo_attainment", &opts).unwrap();
        assert!(drop.excludes_zero() && drop.high < 0.0, "{drop:?}");
        let same = diff_interval(&base, &base, "slo_attainment", &opts).unwrap();
        assert!(!same.excludes_zero(), "{same:?}");
        // The same requests at a 20% higher price: a cost change beyond noise.
        let dearer = sample(0.98, 100, 6.0);
        let up = diff_interval(&base, &dearer, "cost_per_million_output_tokens", &opts).unwrap();
        assert!(up.low > 0.5 && up.high < 1.5, "{up:?}");
        let none = diff_interval(&base, &base, "cost_per_million_output_tokens", &opts).unwrap();
        assert!(!none.excludes_zero(), "{none:?}");
        // A run without the factor (no hardware) gives no interval.
        let bare = Sample {
            factors: Vec::new(),
            ..base.clone()
        };
        assert!(diff_interval(&bare, &base, "output_tps_per_accelerator", &opts).is_none());
    }
}
