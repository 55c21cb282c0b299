use super::*;
use crate::metrics::sla::Precision;

/// Runs a search against a server whose objective is `score(v)` and that passes every
/// value up to `limit`.
fn run(
    bounds: Bounds,
    goal: Goal,
    limit: f64,
    score: impl Fn(f64) -> f64,
) -> (OptimumResult, Vec<f64>) {
    let mut s = OptimumSearch::new(bounds, goal);
    let mut probed = Vec::new();
    for _ in 0..100 {
        match s.next() {
            OptimumNext::Probe(v) => {
                assert!(!probed.contains(&v), "{v} probed twice: {probed:?}");
                assert!((bounds.min..=bounds.max).contains(&v), "{v} out of range");
                probed.push(v);
                s.record(v, v <= limit, Some(score(v)));
            }
            OptimumNext::Done(r) => return (r, probed),
        }
    }
    panic!("search did not end: {probed:?}");
}

fn conc(min: f64, max: f64) -> Bounds {
    Bounds {
        min,
        max,
        integer: true,
        precision: Precision::Relative(0.05),
    }
}

/// Throughput rising to a peak at `peak`, then falling (a server past its sweet spot).
fn hump(peak: f64) -> impl Fn(f64) -> f64 {
    move |v| 1000.0 - (v - peak).powi(2) / peak
}

#[test]
fn unimodal_throughput_finds_its_peak_within_precision() {
    for peak in [37.0, 48.0, 5.0, 300.0] {
        let (r, probed) = run(conc(1.0, 512.0), Goal::Max, 1e9, hump(peak));
        assert_eq!(r.outcome, SearchOutcome::Optimum);
        let best = r.best.unwrap();
        assert!(
            (best - peak).abs() <= (0.05 * peak).max(1.0),
            "peak {peak}: {r:?} {probed:?}"
        );
        assert_eq!(r.best_score, Some(hump(peak)(best)));
        assert!(probed.len() <= 30, "{probed:?}");
        // The ladder comes first: 1, 2, 4, … up to 512 (nothing fails).
        assert_eq!(
            &probed[..10],
            &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0]
        );
    }
}

#[test]
fn a_rate_search_refines_to_the_absolute_precision() {
    let b = Bounds {
        min: 0.5,
        max: 100.0,
        integer: false,
        precision: Precision::Absolute(0.5),
    };
    let (r, _) = run(b, Goal::Max, 1e9, hump(13.3));
    assert!((r.best.unwrap() - 13.3).abs() <= 0.5, "{r:?}");
}

#[test]
fn a_constraint_failure_caps_the_ladder() {
    // Throughput keeps rising, but TTFT fails above 40: the best is the highest passing
    // value, found by refining between 32 and the failing 64.
    let (r, probed) = run(conc(1.0, 512.0), Goal::Max, 40.0, |v| v * 10.0);
    assert_eq!(&probed[..7], &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    assert!(!probed.contains(&128.0), "{probed:?}");
    let (best, fail) = (r.best.unwrap(), r.first_fail.unwrap());
    assert!(best <= 40.0 && fail > 40.0, "{r:?} {probed:?}");
    assert!(fail - best <= 0.05 * best, "{r:?} {probed:?}");
    // `max` itself is probed when the ladder reaches it.
    let (_, probed) = run(conc(1.0, 48.0), Goal::Max, 1e9, |v| v);
    assert_eq!(&probed[..7], &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0]);
}

#[test]
fn min_objective_finds_the_lowest_latency() {
    // Latency is lowest at 12 (batching helps, then queueing hurts).
    let latency = |v: f64| 100.0 + (v - 12.0).powi(2);
    let (r, _) = run(conc(1.0, 256.0), Goal::Min, 1e9, latency);
    assert_eq!(r.best, Some(12.0));
    assert_eq!(r.best_score, Some(100.0));
    assert_eq!(r.outcome, SearchOutcome::Optimum);
}

#[test]
fn ties_go_to_the_lower_load() {
    // A plateau from 16 on: every value from 16 is as good; the lowest wins.
    let (r, _) = run(conc(1.0, 128.0), Goal::Max, 1e9, |v| v.min(16.0));
    assert_eq!(r.best, Some(16.0), "{r:?}");
    let (r, probed) = run(conc(1.0, 8.0), Goal::Min, 1e9, |_| 5.0);
    assert_eq!(r.best, Some(1.0));
    assert_eq!(probed, vec![1.0, 2.0, 4.0, 8.0]);
}

#[test]
fn min_failing_has_no_optimum_and_unknown_scores_fail() {
    let (r, probed) = run(conc(4.0, 64.0), Goal::Max, 2.0, |v| v);
    assert_eq!(probed, vec![4.0]);
    assert_eq!(r.outcome, SearchOutcome::MinFails);
    assert_eq!((r.best, r.first_fail), (None, Some(4.0)));
    let mut s = OptimumSearch::new(conc(1.0, 8.0), Goal::Max);
    s.record(1.0, true, None);
    assert!(matches!(s.next(), OptimumNext::Done(r) if r.outcome == SearchOutcome::MinFails));
}
