//! Student t intervals over a few values (the repeats of a run): the interval of one
//! mean, and Welch's interval of the difference of two means (unequal variances, the
//! Welch–Satterthwaite degrees of freedom). The t quantile is computed from the
//! regularized incomplete beta function, for any degrees of freedom and confidence.
//! Pure arithmetic: knows nothing about runs or storage.

use super::stats::Moments;

/// A mean and its two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanInterval {
    pub n: u64,
    pub mean: f64,
    pub low: f64,
    pub high: f64,
}

impl MeanInterval {
    /// Half the interval's width (the `±` of `mean ± h`).
    pub(crate) fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
}

/// The mean of `values` with its Student t interval at `confidence` (0.95 for 95%);
/// `None` for fewer than two values or any value that is not finite.
pub(crate) fn mean_interval(values: &[f64], confidence: f64) -> Option<MeanInterval> {
    if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let m = Moments::of(values);
    let n = values.len() as f64;
    let sd = sample_variance(&m).sqrt();
    let h = t_quantile(0.5 + confidence / 2.0, n - 1.0)? * sd / n.sqrt();
    Some(MeanInterval {
        n: m.n,
        mean: m.mean,
        low: m.mean - h,
        high: m.mean + h,
    })
}

/// Welch's interval at `confidence` of `mean(new) − mean(base)`; `None` when either side
/// has fewer than two values (or a value that is not finite).
pub(crate) fn welch_interval(base: &[f64], new: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let finite = |v: &[f64]| v.len() >= 2 && v.iter().all(|x| x.is_finite());
    if !finite(base) || !finite(new) {
        return None;
    }
    let (a, b) = (Moments::of(base), Moments::of(new));
    let (na, nb) = (base.len() as f64, new.len() as f64);
    let (va, vb) = (sample_variance(&a) / na, sample_variance(&b) / nb);
    let d = b.mean - a.mean;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        return Some((d, d));
    }
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let h = t_quantile(0.5 + confidence / 2.0, df)? * se;
    Some((d - h, d + h))
}

/// The unbiased variance Σ(x − mean)² / (n − 1), for n ≥ 2.
fn sample_variance(m: &Moments) -> f64 {
    (m.m2 / (m.n as f64 - 1.0)).max(0.0)
}

/// The `p` quantile (0.5 < p < 1) of Student's t with `df` degrees of freedom.
pub(crate) fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(0.5..1.0).contains(&p) || df.is_nan() || df <= 0.0 || !df.is_finite() {
        return None;
    }
    // The CDF rises monotonically: bisect on [0, hi] with hi doubled until it covers p.
    let mut hi = 1.0;
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return None;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo + hi) / 2.0)
}

/// P(T ≤ t) for t ≥ 0.
fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    1.0 - 0.5 * incomplete_beta(x, df / 2.0, 0.5)
}

/// The regularized incomplete beta function I_x(a, b) (continued fraction).
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

/// Lentz's evaluation of the incomplete beta continued fraction.
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + num / c;
            if c.abs() < TINY {
                c = TINY;
            }
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        sum += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95%: the classic table values.
        for (df, want) in [(1.0, 12.706), (2.0, 4.303), (4.0, 2.776), (9.0, 2.262)] {
            let got = t_quantile(0.975, df).unwrap();
            assert!(close(got, want, 0.001), "df {df}: {got}");
        }
        assert!(close(t_quantile(0.95, 30.0).unwrap(), 1.697, 0.001));
        assert!(close(t_quantile(0.975, 1e6).unwrap(), 1.960, 0.001));
        assert_eq!(t_quantile(0.4, 3.0), None);
        assert_eq!(t_quantile(0.975, 0.0), None);
    }

    #[test]
    fn mean_interval_by_hand() {
        // Mean 3, sd sqrt(2.5), n 5: h = 2.776 × 1.5811 / 2.2361 = 1.963.
        let iv = mean_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95).unwrap();
        assert!(close(iv.mean, 3.0, 1e-12));
        assert!(close(iv.half_width(), 1.963, 0.001), "{iv:?}");
        assert_eq!(mean_interval(&[1.0], 0.95), None);
        assert_eq!(mean_interval(&[1.0, f64::NAN], 0.95), None);
    }

    #[test]
    fn welch_by_hand() {
        // Equal sizes and spreads: va = vb = 2.5/5, se = 1, df = 8, t = 2.306.
        let (lo, hi) =
            welch_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.0, 4.0, 5.0, 6.0, 7.0], 0.95).unwrap();
        assert!(close(lo, 2.0 - 2.306, 0.001) && close(hi, 2.0 + 2.306, 0.001));
        // No spread on either side: the difference itself.
        assert_eq!(
            welch_interval(&[1.0, 1.0], &[2.0, 2.0], 0.95),
            Some((1.0, 1.0))
        );
        assert_eq!(welch_interval(&[1.0], &[2.0, 2.0], 0.95), None);
    }
}
