//! The open-loop arrival process: seeded gaps between intended send times (Poisson,
//! gamma with burstiness, constant). Pure: testable without a clock.

use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

/// How arrivals are spread in time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// Exponential gaps (coefficient of variation 1).
    Poisson,
    /// Gamma gaps with shape `burstiness` (1 = Poisson, < 1 burstier, > 1 smoother),
    /// mean 1/rate, as vLLM's `--burstiness`.
    Gamma { burstiness: f64 },
    /// Equal gaps of 1/rate.
    Constant,
}

enum Gaps {
    Exp(Exp<f64>),
    Gamma(Gamma<f64>),
    Constant(f64),
    /// A recorded schedule (trace replay): the gaps between given offsets, then none.
    Offsets(Vec<Duration>, usize),
}

/// Produces the gaps between intended send times at `rate` per second.
pub struct ArrivalClock {
    gaps: Gaps,
    rng: ChaCha8Rng,
    /// The process, for a change of rate (`set_rate`); none for recorded offsets.
    process: Option<(Arrivals, f64)>,
}

/// Why an arrival process cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArrivalError {
    #[error("arrival rate must be a positive number, got {0}")]
    Rate(f64),
    #[error("burstiness must be a positive number, got {0}")]
    Burstiness(f64),
}

/// The gaps of `arrivals` at `rate` per second.
fn gaps_of(rate: f64, arrivals: Arrivals) -> Result<Gaps, ArrivalError> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(ArrivalError::Rate(rate));
    }
    Ok(match arrivals {
        Arrivals::Poisson => Gaps::Exp(Exp::new(rate).map_err(|_| ArrivalError::Rate(rate))?),
        Arrivals::Gamma { burstiness: b } => {
            if !(b.is_finite() && b > 0.0) {
                return Err(ArrivalError::Burstiness(b));
            }
            let g = Gamma::new(b, 1.0 / (rate * b)).map_err(|_| ArrivalError::Burstiness(b))?;
            Gaps::Gamma(g)
        }
        Arrivals::Constant => Gaps::Constant(1.0 / rate),
    })
}

impl ArrivalClock {
    pub fn new(rate: f64, arrivals: Arrivals, seed: u64) -> Result<ArrivalClock, ArrivalError> {
        Ok(ArrivalClock {
            gaps: gaps_of(rate, arrivals)?,
            rng: ChaCha8Rng::seed_from_u64(seed),
            process: Some((arrivals, rate)),
        })
    }

    /// Arrivals at `rate` from now on, drawn from the same seeded sequence; the rate
    /// they had before (`None` for recorded offsets, or a rate that is not positive,
    /// which change nothing). A gap already drawn is the caller's to rescale by old ÷ new
    /// rate from the instant of the change (exact for Poisson, whose gaps are memoryless).
    pub(crate) fn set_rate(&mut self, rate: f64) -> Option<f64> {
        let (arrivals, old) = self.process?;
        self.gaps = gaps_of(rate, arrivals).ok()?;
        self.process = Some((arrivals, rate));
        Some(old)
    }

    /// Arrivals at recorded offsets (sorted; the first arrival is at zero, later ones at
    /// their offset from the first). After the last one, arrivals come without a gap, so
    /// the driver asks its source at once and learns that it is exhausted.
    pub(crate) fn from_offsets(offsets: &[Duration]) -> ArrivalClock {
        ArrivalClock {
            gaps: Gaps::Offsets(offsets.to_vec(), 0),
            rng: ChaCha8Rng::seed_from_u64(0),
            process: None,
        }
    }

    /// The gap before the next arrival.
    pub fn next_gap(&mut self) -> Duration {
        if let Gaps::Offsets(offsets, i) = &mut self.gaps {
            let gap = match (offsets.get(*i), offsets.get(*i + 1)) {
                (Some(a), Some(b)) => b.saturating_sub(*a),
                _ => Duration::ZERO,
            };
            *i += 1;
            return gap;
        }
        let secs = match &self.gaps {
            Gaps::Offsets(..) => 1.0e6,
            Gaps::Exp(d) => d.sample(&mut self.rng),
            Gaps::Gamma(d) => d.sample(&mut self.rng),
            Gaps::Constant(s) => *s,
        };
        crate::units::duration_from_secs(secs.min(1.0e6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(rate: f64, arrivals: Arrivals, seed: u64, n: usize) -> (f64, f64) {
        let mut c = ArrivalClock::new(rate, arrivals, seed).unwrap();
        let gaps: Vec<f64> = (0..n).map(|_| c.next_gap().as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn poisson_has_mean_one_over_rate_and_cv_one() {
        let (mean, cv) = stats(50.0, Arrivals::Poisson, 42, 200_000);
        assert!((mean - 0.02).abs() / 0.02 < 0.01, "mean {mean}");
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
    }

    #[test]
    fn gamma_cv_is_one_over_sqrt_burstiness() {
        let (mean, cv) = stats(100.0, Arrivals::Gamma { burstiness: 0.25 }, 7, 200_000);
        assert!((mean - 0.01).abs() / 0.01 < 0.02, "mean {mean}");
        assert!((cv - 2.0).abs() < 0.05, "cv {cv}");
    }

    #[test]
    fn constant_is_exact_and_seeds_repeat() {
        let (mean, cv) = stats(4.0, Arrivals::Constant, 0, 100);
        assert!((mean - 0.25).abs() < 1e-9 && cv < 1e-6);
        let a: Vec<_> = {
            let mut c = ArrivalClock::new(5.0, Arrivals::Poisson, 3).unwrap();
            (0..10).map(|_| c.next_gap()).collect()
        };
        let b: Vec<_> = {
            let mut c = ArrivalClock::new(5.0, Arrivals::Poisson, 3).unwrap();
            (0..10).map(|_| c.next_gap()).collect()
        };
        assert_eq!(a, b);
    }

    #[test]
    fn recorded_offsets_give_their_gaps() {
        let ms = Duration::from_millis;
        let mut c = ArrivalClock::from_offsets(&[ms(0), ms(5), ms(5), ms(12)]);
        let gaps: Vec<_> = (0..3).map(|_| c.next_gap()).collect();
        assert_eq!(gaps, [ms(5), ms(0), ms(7)]);
        assert_eq!(c.next_gap(), Duration::ZERO);
    }

    #[test]
    fn a_new_rate_keeps_the_seeded_sequence() {
        // Constant gaps follow the new rate; Poisson gaps are the same draws rescaled.
        let mut c = ArrivalClock::new(4.0, Arrivals::Constant, 0).unwrap();
        assert_eq!(c.set_rate(10.0), Some(4.0));
        assert_eq!(c.next_gap(), Duration::from_millis(100));
        let mut a = ArrivalClock::new(5.0, Arrivals::Poisson, 3).unwrap();
        let mut b = ArrivalClock::new(10.0, Arrivals::Poisson, 3).unwrap();
        a.set_rate(10.0);
        assert_eq!(a.next_gap(), b.next_gap());
        assert_eq!(a.set_rate(-1.0), None);
        assert_eq!(ArrivalClock::from_offsets(&[]).set_rate(2.0), None);
    }

    #[test]
    fn bad_settings_are_errors() {
        assert!(ArrivalClock::new(0.0, Arrivals::Poisson, 0).is_err());
        assert!(ArrivalClock::new(1.0, Arrivals::Gamma { burstiness: -1.0 }, 0).is_err());
    }
}
