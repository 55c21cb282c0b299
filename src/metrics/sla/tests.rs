use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::record::RequestRecord;

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

#[test]
fn slo_splits_into_objective_and_limits() {
    let slo: BTreeMap<String, String> = [
        ("output_tps".to_string(), "max".to_string()),
        ("ttft_p99".to_string(), "<= 2s".to_string()),
    ]
    .into();
    let (obj, limits) = split_slo(&slo).unwrap();
    assert_eq!(
        obj,
        Some(Objective {
            metric: "output_tps".into(),
            goal: Goal::Max
        })
    );
    assert_eq!(limits.len(), 1);
    assert_eq!(limits[0].metric, "ttft_p99");
    let two: BTreeMap<String, String> = [
        ("output_tps".to_string(), "max".to_string()),
        ("ttft_p99".to_string(), "min".to_string()),
    ]
    .into();
    assert!(split_slo(&two)
        .unwrap_err()
        .to_string()
        .contains("at most one"));
    let unknown: BTreeMap<String, String> = [("output_tsp".to_string(), "max".to_string())].into();
    assert!(split_slo(&unknown)
        .unwrap_err()
        .to_string()
        .contains("did you mean `output_tps`"));
    let known = obj.unwrap().known_condition();
    assert!(known.check(0.0, None).unwrap());
}
