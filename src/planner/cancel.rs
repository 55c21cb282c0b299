//! A load's `cancel`, checked and typed: which measured requests the client aborts and
//! when (a seeded draw per request index, from the plan's seed, so the same requests are
//! cancelled at the same times on every machine, every shard and every endpoint), and
//! how long the server may take to settle afterwards.

use std::time::Duration;

use crate::hash::mix64;
use crate::plan::{CancelAfter, CancelSpec, LoadSpec};

/// `settle` when unset.
pub(crate) const DEFAULT_SETTLE: Duration = Duration::from_secs(10);
/// The longest `settle`.
pub(crate) const MAX_SETTLE: Duration = Duration::from_secs(600);
/// The longest `after` (a request is never aborted later than this after send).
pub(crate) const MAX_AFTER: Duration = Duration::from_secs(3600);

/// Salts of the two draws (apart from every other draw of the seed).
const CHOSEN_SALT: u64 = 0x6361_6e63_656c_5f63;
const AFTER_SALT: u64 = 0x6361_6e63_656c_5f61;

/// A run's cancellation injection, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CancelPlan {
    pub share: f64,
    /// `after`'s range (equal bounds for a fixed time).
    pub min: Duration,
    pub max: Duration,
    pub settle: Duration,
    /// The plan's seed.
    pub seed: u64,
}

/// A uniform number in [0, 1) from a seed, a salt and a request index.
fn unit(seed: u64, salt: u64, index: u64) -> f64 {
    let x = mix64(mix64(seed ^ salt) ^ index);
    (x >> 11) as f64 / (1u64 << 53) as f64
}

impl CancelPlan {
    /// The plan of a load's `cancel` (checked by `cancel_problems` before).
    pub fn of(spec: &CancelSpec, seed: u64) -> CancelPlan {
        let (min, max) = match spec.after {
            CancelAfter::Fixed(d) => (d.0, d.0),
            CancelAfter::Range { min, max } => (min.0, max.0.max(min.0)),
        };
        CancelPlan {
            share: spec.share.clamp(0.0, 1.0),
            min,
            max,
            settle: spec.settle.map_or(DEFAULT_SETTLE, |d| d.0.min(MAX_SETTLE)),
            seed,
        }
    }

    /// When request `index` (the run's item index, the same across shards) is aborted
    /// after its send; `None` for a request not chosen. A drawn time is whole
    /// milliseconds (a fixed one as written).
    pub fn after_for(&self, index: u64) -> Option<Duration> {
        if unit(self.seed, CHOSEN_SALT, index) >= self.share {
            return None;
        }
        if self.max <= self.min {
            return Some(self.min);
        }
        let span = (self.max - self.min).as_secs_f64();
        let drawn = self.min.as_secs_f64() + unit(self.seed, AFTER_SALT, index) * span;
        Some(Duration::from_millis((drawn * 1000.0).round() as u64).clamp(self.min, self.max))
    }
}

/// Impossible `cancel` settings of a load.
pub(crate) fn cancel_problems(load: &LoadSpec) -> Vec<String> {
    let Some(spec) = &load.cancel else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if !(spec.share.is_finite() && spec.share > 0.0 && spec.share <= 1.0) {
        out.push(format!(
            "`cancel.share` must be above 0 and at most 1 (a share of the measured requests); {} is not",
            spec.share
        ));
    }
    let (min, max) = match spec.after {
        CancelAfter::Fixed(d) => (d.0, d.0),
        CancelAfter::Range { min, max } => (min.0, max.0),
    };
    if min > max {
        out.push("`cancel.after`: `min` is above `max`".to_string());
    }
    if min.is_zero() {
        out.push(
            "`cancel.after` must be above 0 (a request is aborted after it was sent)".to_string(),
        );
    }
    if max > MAX_AFTER {
        out.push("`cancel.after` is at most 1h".to_string());
    }
    if spec.settle.is_some_and(|s| s.0 > MAX_SETTLE) {
        out.push("`cancel.settle` is at most 10m".to_string());
    }
    if load.search.is_some() {
        out.push(
            "`cancel` does not apply to an SLA search: its probes are judged by `slo`".to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::HumanDuration;

    fn plan(share: f64, after: CancelAfter) -> CancelPlan {
        CancelPlan::of(
            &CancelSpec {
                share,
                after,
                settle: None,
            },
            42,
        )
    }

    #[test]
    fn the_share_is_drawn_per_index_and_the_same_every_time() {
        let p = plan(
            0.1,
            CancelAfter::Fixed(HumanDuration(Duration::from_millis(500))),
        );
        let chosen: Vec<u64> = (0..10_000).filter(|&i| p.after_for(i).is_some()).collect();
        let share = chosen.len() as f64 / 10_000.0;
        assert!((share - 0.1).abs() < 0.01, "{share}");
        let again: Vec<u64> = (0..10_000).filter(|&i| p.after_for(i).is_some()).collect();
        assert_eq!(chosen, again);
        assert_eq!(p.after_for(chosen[0]), Some(Duration::from_millis(500)));
        assert_eq!(p.settle, DEFAULT_SETTLE);
        // Another seed chooses other requests.
        let other = CancelPlan { seed: 43, ..p };
        let theirs: Vec<u64> = (0..10_000)
            .filter(|&i| other.after_for(i).is_some())
            .collect();
        assert_ne!(chosen, theirs);
    }

    #[test]
    fn a_range_is_drawn_uniformly_in_whole_milliseconds() {
        let ms = |n| HumanDuration(Duration::from_millis(n));
        let p = plan(
            1.0,
            CancelAfter::Range {
                min: ms(200),
                max: ms(2000),
            },
        );
        let times: Vec<Duration> = (0..4000).filter_map(|i| p.after_for(i)).collect();
        assert_eq!(times.len(), 4000);
        assert!(times.iter().all(|t| *t >= ms(200).0 && *t <= ms(2000).0));
        assert!(times.iter().all(|t| t.subsec_nanos() % 1_000_000 == 0));
        let mean = times.iter().map(Duration::as_secs_f64).sum::<f64>() / 4000.0;
        assert!((mean - 1.1).abs() < 0.03, "{mean}");
    }

    #[test]
    fn impossible_settings_are_named() {
        let load = LoadSpec {
            cancel: Some(CancelSpec {
                share: 1.5,
                after: CancelAfter::Range {
                    min: HumanDuration(Duration::from_secs(2)),
                    max: HumanDuration(Duration::from_secs(1)),
                },
                settle: Some(HumanDuration(Duration::from_secs(3600))),
            }),
            ..LoadSpec::default()
        };
        let p = cancel_problems(&load).join("\n");
        assert!(p.contains("cancel.share"), "{p}");
        assert!(p.contains("`min` is above `max`"), "{p}");
        assert!(p.contains("cancel.settle"), "{p}");
    }
}
