use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::record::RequestRecord;

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

#[test]
fn multiples_parse() {
    assert_eq!(parse_multiple("4x"), Some(4.0));
    assert_eq!(parse_multiple(" 0.5x"), Some(0.5));
    assert_eq!(parse_multiple("4"), None);
    assert_eq!(parse_multiple("-1x"), None);
}

#[test]
fn verdict_names_the_failed_metric() {
    let slo: BTreeMap<String, String> = [
        ("success_ratio".to_string(), ">= 0.99".to_string()),
        ("ttft_p99".to_string(), "<= 2s".to_string()),
    ]
    .into();
    let conds = parse_slo(&slo).unwrap();
    let mut values: BTreeMap<String, Option<f64>> = BTreeMap::new();
    values.insert("ttft_p99".into(), Some(1500.0));
    values.insert("success_ratio".into(), Some(1.0));
    assert!(verdict(&values, &conds).passed);
    values.insert("ttft_p99".into(), Some(2500.0));
    let v = verdict(&values, &conds);
    assert!(!v.passed);
    assert_eq!(v.failed_metric.as_deref(), Some("ttft_p99"));
    values.insert("ttft_p99".into(), None);
    assert!(!verdict(&values, &conds).passed);
    let rel: BTreeMap<String, String> = [("ttft_p99".to_string(), "<= 5%".to_string())].into();
    assert!(parse_slo(&rel).is_err());
}

#[test]
fn a_search_without_a_success_condition_gets_the_default_floor_first() {
    let slo: BTreeMap<String, String> = [("ttft_p99".to_string(), "<= 2s".to_string())].into();
    let (conds, floor) = with_success_floor(parse_slo(&slo).unwrap());
    assert!(floor.default);
    assert_eq!(conds[0].metric, "success_ratio");
    assert!(floor
        .describe()
        .starts_with("success_ratio >= 1.0 (the default"));
    let mut values: BTreeMap<String, Option<f64>> = BTreeMap::new();
    values.insert("ttft_p99".into(), Some(10.0));
    values.insert("success_ratio".into(), Some(0.9));
    let v = verdict(&values, &conds);
    assert_eq!(v.failed_metric.as_deref(), Some("success_ratio"), "{v:?}");
    assert_eq!(
        v.detail.as_deref(),
        Some("success_ratio = 0.900 (needs >= 1.0)")
    );
    // The plan's own success condition replaces the default.
    let own: BTreeMap<String, String> = [
        ("success_ratio".to_string(), ">= 0.8".to_string()),
        ("ttft_p99".to_string(), "<= 2s".to_string()),
    ]
    .into();
    let (conds, floor) = with_success_floor(parse_slo(&own).unwrap());
    assert!(!floor.default);
    assert_eq!(conds.len(), 2);
    assert!(verdict(&values, &conds).passed);
    assert_eq!(
        floor.describe(),
        "success_ratio >= 0.8 (from the search's `slo`)"
    );
}

fn rec(sent_ms: u64, ttft_ms: u64, end_ms: u64) -> RequestRecord {
    let ms = Duration::from_millis;
    RequestRecord {
        intended: ms(sent_ms),
        sent: ms(sent_ms),
        content_times: vec![ms(sent_ms + ttft_ms), ms(end_ms)],
        end: ms(end_ms),
        usage: crate::record::Usage {
            completion_tokens: Some(2),
            ..Default::default()
        },
        finish_reason: Some("length".into()),
        ..Default::default()
    }
}

/// Pooled statistics come from all records: the p50 of two trials is the median of
/// their union, not the mean of their medians; throughput is over the summed durations.
#[test]
fn pooling_recomputes_from_all_records() {
    let warmup = RequestRecord {
        phase: crate::record::Phase::Warmup,
        ..rec(0, 10, 50)
    };
    let a = vec![rec(0, 10, 100), rec(0, 10, 100), rec(0, 10, 100)];
    let b = vec![warmup, rec(50, 100, 150)];
    let pooled = pool(vec![a.clone(), b.clone()]);
    // Folded trial by trial as a search step reads them, the same summary.
    let mut folded = Pool::new(Default::default(), &[]);
    for trial in [&a, &b] {
        folded
            .add_trial(|f| {
                trial.iter().for_each(&mut *f);
                Ok::<(), ()>(())
            })
            .unwrap();
    }
    let streamed = folded.finish(&Default::default());
    assert_eq!(
        streamed.values,
        crate::metrics::summarize(&pooled, &Default::default()).values
    );
    assert_eq!(pooled.len(), 4, "warmup is left out");
    assert_eq!(pooled[3].sent, Duration::from_millis(100));
    assert_eq!(pooled[3].index, 3);
    let s = crate::metrics::summarize(&pooled, &Default::default());
    assert_eq!(s.values["ttft_p50"], Some(10.0));
    assert_eq!(s.values["duration_s"], Some(0.2));
    assert_eq!(s.values["rps"], Some(20.0));
}
