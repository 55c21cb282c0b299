use serde_json::json;

use super::*;

/// Repeat `k` of 3 of group `group` with `ttft_p50` = `ttft` ms.
fn repeat(group: &str, k: u32, ttft: f64) -> StoredRun {
    StoredRun {
        id: format!("{group}-{k}"),
        ordinal: k,
        axes: json!({"load": "c=1", "repeat": k}),
        settings: json!({"seed": 1, "repeat": {"group": group, "k": k, "of": 3}}),
        status: RunStatus::Done,
        started_unix_ms: None,
        finished_unix_ms: None,
        warnings: Vec::new(),
        facts: crate::record::RunFacts::default(),
        error: None,
        metrics: [("ttft_p50".to_string(), Some(ttft))].into_iter().collect(),
        verdict: Default::default(),
    }
}

fn gate(text: &str) -> Condition {
    parse_condition("ttft_p50", text).unwrap()
}

#[test]
fn a_relative_gate_holds_the_group_mean_against_the_baseline_groups() {
    // Repeat by repeat the first would be +20% (120 vs 100); the means are equal (110).
    let base = [100.0, 100.0, 130.0];
    let base: Vec<StoredRun> = (1..=3)
        .map(|k| repeat("b", k, base[k as usize - 1]))
        .collect();
    let new: Vec<StoredRun> = [(1, 120.0), (2, 115.0), (3, 95.0)]
        .into_iter()
        .map(|(k, t)| repeat("n", k, t))
        .collect();
    let baseline = Baseline {
        runs: &base,
        ignore: &[],
        allow_changed: &[],
        clock: Clock::Kernel,
    };
    let out = evaluate(&new, &[gate("<= +5%")], Some(baseline));
    assert_eq!(out.len(), 1, "one verdict per group: {out:?}");
    let o = &out[0];
    assert!(o.passed, "{}", o.message);
    assert_eq!((o.value, o.baseline), (Some(110.0), Some(110.0)));
    assert!(o.run_label.contains("mean of 3 repeats"), "{}", o.run_label);
    assert!(o.message.contains("3 repeats against 3"), "{}", o.message);
    // A slower group fails on its mean: 132 against 110 is +20%.
    let slow: Vec<StoredRun> = (1..=3).map(|k| repeat("s", k, 132.0)).collect();
    let out = evaluate(&slow, &[gate("<= +5%")], Some(baseline));
    assert_eq!(out.len(), 1);
    assert!(!out[0].passed, "{}", out[0].message);
    // Absolute gates still hold every repeat.
    let out = evaluate(&new, &[gate("<= 118ms")], None);
    let verdicts: Vec<bool> = out.iter().map(|o| o.passed).collect();
    assert_eq!(verdicts, [false, true, true]);
}

#[test]
fn a_run_not_repeated_is_a_group_of_one() {
    let mut base = repeat("b", 1, 100.0);
    base.settings = json!({"seed": 1});
    base.axes = json!({"load": "c=1"});
    let mut new = base.clone();
    new.metrics.insert("ttft_p50".into(), Some(104.0));
    let baseline = Baseline {
        runs: std::slice::from_ref(&base),
        ignore: &[],
        allow_changed: &[],
        clock: Clock::Kernel,
    };
    let out = evaluate(&[new], &[gate("<= +5%")], Some(baseline));
    assert_eq!(out.len(), 1);
    assert!(out[0].passed, "{}", out[0].message);
    assert!(!out[0].message.contains("means"), "{}", out[0].message);
}
