//! A concurrency ramp resolved: the plan's `concurrency_ramp` table
//! (`plan::ConcurrencyRampSpec`) checked and turned into the one curve type a rate ramp
//! has (`RateCurve`, here of requests in flight instead of req/s), then into whole slots
//! over time: the levels the engine's closed loop follows ([`slot_levels`]) and the steps
//! its per-step metrics are read in ([`concurrency_steps`]). Pure: no clock, no I/O.

use std::time::Duration;

use super::ramp::{curve_problems, RampStep, RampWords, RateCurve};
use crate::plan::{ranges, ConcurrencyRampSpec, LoadSpec};
use crate::units::duration_from_secs;

/// A concurrency ramp's words in its errors.
pub(crate) const CONCURRENCY_WORDS: RampWords = RampWords {
    key: "concurrency_ramp",
    noun: "concurrency",
    series: "concurrencies",
    example: ("from = 1, to = 64", "[1, 4, 16]"),
};

/// The curve of a concurrency ramp that [`concurrency_ramp_problems`] accepts.
pub(crate) fn curve_of(spec: &ConcurrencyRampSpec) -> Option<RateCurve> {
    if !spec_problems(spec).is_empty() {
        return None;
    }
    RateCurve::of(&spec.as_curve())
}

/// The slots of a concurrency curve over time: `(at, slots)` from the start, each held
/// until the next, the curve's value rounded to a whole slot (at least 1); only changes
/// are listed, the first at zero. A linear or exponential curve changes where it crosses
/// a half (k ± ½), a step curve at its steps.
pub(crate) fn slot_levels(curve: &RateCurve) -> Vec<(Duration, u32)> {
    let whole = |v: f64| v.round().clamp(1.0, f64::from(ranges::MAX_CONCURRENCY)) as u32;
    let mut out: Vec<(Duration, u32)> = Vec::new();
    let mut push = |at: f64, slots: u32| {
        if out.last().is_none_or(|&(_, s)| s != slots) {
            out.push((duration_from_secs(at), slots));
        }
    };
    match *curve {
        RateCurve::Steps { ref rates, width } => {
            for (k, r) in rates.iter().enumerate() {
                push(k as f64 * width, whole(*r));
            }
        }
        RateCurve::Linear { from, to, over, .. }
        | RateCurve::Exponential { from, to, over, .. } => {
            let linear = matches!(curve, RateCurve::Linear { .. });
            // The time at which the curve is worth `v` (from < v < to, or to < v < from).
            let time_at = |v: f64| {
                let share = if linear {
                    (v - from) / (to - from)
                } else {
                    (v / from).ln() / (to / from).ln()
                };
                over * share
            };
            let (a, b) = (whole(from), whole(to));
            push(0.0, a);
            if b > a {
                for k in a + 1..=b {
                    push(time_at(f64::from(k) - 0.5), k);
                }
            } else {
                for k in (b..a).rev() {
                    push(time_at(f64::from(k) + 0.5), k);
                }
            }
        }
    }
    out
}

/// The windows of a concurrency ramp's per-step metrics (the curve's `steps`), each with
/// its slots' time-weighted mean in `rate`: a step's own concurrency for a step curve or a
/// series, the mean in flight planned inside the window for a cut linear or exponential one.
pub(crate) fn concurrency_steps(curve: &RateCurve) -> Vec<RampStep> {
    let levels = slot_levels(curve);
    let span = curve.span();
    curve
        .steps()
        .into_iter()
        .map(|s| RampStep {
            rate: mean_slots(&levels, span, s.start.as_secs_f64(), s.end.as_secs_f64()),
            ..s
        })
        .collect()
}

/// The time-weighted mean of `levels` over [a, b) (the last level held until `span`).
fn mean_slots(levels: &[(Duration, u32)], span: f64, a: f64, b: f64) -> f64 {
    if b <= a {
        return 0.0;
    }
    let mut sum = 0.0;
    for (i, &(at, slots)) in levels.iter().enumerate() {
        let start = at.as_secs_f64();
        let end = levels.get(i + 1).map_or(span, |(t, _)| t.as_secs_f64());
        let overlap = end.min(b) - start.max(a);
        if overlap > 0.0 {
            sum += f64::from(slots) * overlap;
        }
    }
    sum / (b - a)
}

/// How long the run lasts: the curve, or its `duration` when that is shorter.
pub(crate) fn run_span(curve: &RateCurve, duration: Option<Duration>) -> Duration {
    let span = duration_from_secs(curve.span());
    duration.map_or(span, |d| d.min(span))
}

/// What is wrong with the table itself.
fn spec_problems(spec: &ConcurrencyRampSpec) -> Vec<String> {
    let mut out = curve_problems(&spec.as_curve(), &CONCURRENCY_WORDS);
    if let Some(c) = spec
        .concurrencies
        .iter()
        .find(|&&c| !(1..=ranges::MAX_CONCURRENCY).contains(&c))
    {
        out.push(format!(
            "ramp concurrency {c} is out of range: each is from 1 to {}",
            ranges::MAX_CONCURRENCY
        ));
    }
    out
}

/// What is wrong with a concurrency ramp in its load: the table, and the keys it cannot
/// go with.
pub(crate) fn concurrency_ramp_problems(
    load: &LoadSpec,
    spec: &ConcurrencyRampSpec,
) -> Vec<String> {
    let mut out = spec_problems(spec);
    let clashing: Vec<&str> = [
        ("concurrency", load.concurrency.is_some()),
        ("rate", load.rate.is_some()),
        ("ramp", load.ramp.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    if !clashing.is_empty() {
        out.push(format!(
            "a concurrency ramp sets the load's concurrency over time: drop `{}`",
            clashing.join("`, `")
        ));
    }
    if load.search.is_some() {
        out.push("a concurrency ramp cannot be searched: an SLA search probes fixed loads".into());
    }
    if load.arrivals.is_some() || load.burstiness.is_some() || load.max_in_flight.is_some() {
        out.push("`arrivals`, `burstiness` and `max_in_flight` apply to open loops (`rate`, `ramp`), not to a concurrency ramp".into());
    }
    if super::warmup_count(load) > 0 {
        out.push("a concurrency ramp has no warmup: its first requests meet the lowest concurrency (drop `warmup`)".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::RampShape;
    use crate::units::HumanDuration;

    fn secs(s: f64) -> Option<HumanDuration> {
        Some(HumanDuration(Duration::from_secs_f64(s)))
    }

    fn ms(levels: &[(Duration, u32)]) -> Vec<(u128, u32)> {
        levels.iter().map(|(t, s)| (t.as_millis(), *s)).collect()
    }

    fn ramp(from: u32, to: u32, shape: RampShape, steps: Option<u32>) -> RateCurve {
        curve_of(&ConcurrencyRampSpec {
            from: Some(from),
            to: Some(to),
            over: secs(8.0),
            shape: Some(shape),
            steps,
            ..ConcurrencyRampSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn levels_change_where_the_curve_crosses_a_half() {
        // Linear 1 → 5 over 8 s: worth k − ½ at 2 (k − 1.5) s.
        let lin = slot_levels(&ramp(1, 5, RampShape::Linear, None));
        assert_eq!(
            ms(&lin),
            [(0, 1), (1000, 2), (3000, 3), (5000, 4), (7000, 5)]
        );
        // Falling 5 → 1: 4 once below 4.5 (at 1 s), 1 below 1.5 (at 7 s).
        let down = slot_levels(&ramp(5, 1, RampShape::Linear, None));
        assert_eq!(
            ms(&down),
            [(0, 5), (1000, 4), (3000, 3), (5000, 2), (7000, 1)]
        );
        // Exponential 1 → 4 over 8 s: worth v at 8 · log4 v s (1.5: 2.340 s; 2.5: 5.288; 3.5: 7.229).
        let exp = slot_levels(&ramp(1, 4, RampShape::Exponential, None));
        assert_eq!(ms(&exp), [(0, 1), (2339, 2), (5287, 3), (7229, 4)]);
        // Step 1 → 8 in 4 steps of 2 s: 1, 3.33, 5.67, 8 rounded.
        let st = slot_levels(&ramp(1, 8, RampShape::Step, Some(4)));
        assert_eq!(ms(&st), [(0, 1), (2000, 3), (4000, 6), (6000, 8)]);
    }

    #[test]
    fn a_series_holds_each_concurrency_and_steps_carry_it() {
        let c = curve_of(&ConcurrencyRampSpec {
            concurrencies: vec![1, 4, 4, 16],
            step: secs(0.5),
            ..ConcurrencyRampSpec::default()
        })
        .unwrap();
        assert_eq!(ms(&slot_levels(&c)), [(0, 1), (500, 4), (1500, 16)]);
        let steps: Vec<f64> = concurrency_steps(&c).iter().map(|s| s.rate).collect();
        assert_eq!(steps, [1.0, 4.0, 4.0, 16.0]);
        // Linear 1 → 5 cut in 2: slots 1 (1 s), 2 (2 s), 3 (1 s) → 2; then 3, 4 (2 s), 5 → 4.
        let lin = concurrency_steps(&ramp(1, 5, RampShape::Linear, Some(2)));
        assert!((lin[0].rate - 2.0).abs() < 1e-9 && (lin[1].rate - 4.0).abs() < 1e-9);
    }

    #[test]
    fn bad_concurrency_ramps_say_what_to_do() {
        let load = LoadSpec {
            concurrency: Some(4),
            rate: Some(2.0),
            arrivals: Some(crate::plan::Arrivals::Constant),
            warmup: Some(crate::plan::WarmupSpec::Count(2)),
            ..LoadSpec::default()
        };
        let spec = ConcurrencyRampSpec {
            concurrencies: vec![1, 0],
            ..ConcurrencyRampSpec::default()
        };
        let p = concurrency_ramp_problems(&load, &spec).join("\n");
        for want in [
            "a concurrency series needs `step`",
            "ramp concurrency 0 is out of range",
            "drop `concurrency`, `rate`",
            "apply to open loops",
            "no warmup",
        ] {
            assert!(p.contains(want), "{want}: {p}");
        }
        let half = ConcurrencyRampSpec {
            from: Some(1),
            shape: Some(RampShape::Step),
            ..ConcurrencyRampSpec::default()
        };
        let p = concurrency_ramp_problems(&LoadSpec::default(), &half).join("\n");
        assert!(p.contains("a concurrency_ramp needs `to`"), "{p}");
        assert!(p.contains("a step concurrency_ramp needs `steps`"), "{p}");
    }
}
