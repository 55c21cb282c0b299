use super::*;
use crate::metrics::sla::Precision;

/// Runs a search against a server that passes every value up to `limit`.
fn run(bounds: Bounds, limit: f64) -> (SearchResult, Vec<f64>) {
    let mut s = Search::new(bounds);
    let mut probed = Vec::new();
    for _ in 0..100 {
        match s.next() {
            Next::Probe(v) => {
                probed.push(v);
                s.record(v, v <= limit);
            }
            Next::Done(r) => return (r, probed),
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

#[test]
fn concurrency_search_brackets_then_bisects_to_the_exact_integer() {
    let (r, probed) = run(conc(1.0, 512.0), 16.0);
    assert_eq!(r.best_pass, Some(16.0));
    assert_eq!(r.first_fail, Some(17.0));
    assert_eq!(r.outcome, SearchOutcome::Found);
    assert_eq!(
        probed,
        vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 24.0, 20.0, 18.0, 17.0]
    );
    let (r, probed) = run(conc(1.0, 512.0), 100.0);
    assert_eq!(r.best_pass, Some(100.0));
    assert!(r.first_fail.unwrap() - 100.0 <= 5.0, "{r:?}");
    assert!(probed.len() <= 9 + 6, "{probed:?}");
}

#[test]
fn min_failing_stops_at_once_and_max_passing_says_so() {
    let (r, probed) = run(conc(4.0, 64.0), 2.0);
    assert_eq!(probed, vec![4.0]);
    assert_eq!(r.outcome, SearchOutcome::MinFails);
    assert_eq!((r.best_pass, r.first_fail), (None, Some(4.0)));
    let (r, probed) = run(conc(1.0, 48.0), 1000.0);
    assert_eq!(probed, vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0]);
    assert_eq!(r.outcome, SearchOutcome::MaxPasses);
    assert_eq!(r.best_pass, Some(48.0));
}

#[test]
fn rate_search_meets_its_precision() {
    for limit in [3.3, 47.0, 123.4] {
        let b = Bounds {
            min: 1.0,
            max: 1000.0,
            integer: false,
            precision: Precision::Relative(0.05),
        };
        let (r, probed) = run(b, limit);
        let (pass, fail) = (r.best_pass.unwrap(), r.first_fail.unwrap());
        assert!(pass <= limit && fail > limit, "{r:?}");
        assert!(fail - pass <= 0.05 * pass, "{r:?}");
        assert!(probed.len() <= 20, "{probed:?}");
    }
    let b = Bounds {
        min: 10.0,
        max: 1000.0,
        integer: false,
        precision: Precision::Absolute(2.0),
    };
    let (r, _) = run(b, 55.0);
    assert!(r.first_fail.unwrap() - r.best_pass.unwrap() <= 2.0, "{r:?}");
}
