//! Metrics a suite stored before they existed, worked out from the metrics it did store
//! where that is exact: `good_requests` is `goodput_rps × duration_s` (an integer, so
//! rounding only undoes floating point) and `slo_attainment` that over the measured
//! requests. A suite stored before them reads with them, so `compare` and relative gates
//! can hold a new suite's attainment against an old one's. What the stored metrics cannot
//! give (good output tokens, mean in flight, cost) stays unknown.

use std::collections::BTreeMap;

/// Fills `good_requests` and `slo_attainment` of a run whose stored metrics predate them
/// (neither key stored) and give them; leaves any other run as it is (adds no unknowns).
pub(crate) fn backfill(values: &mut BTreeMap<String, Option<f64>>) {
    if values.contains_key("good_requests") {
        return;
    }
    let get = |name: &str| values.get(name).copied().flatten();
    let Some(good) = get("goodput_rps")
        .zip(get("duration_s"))
        .map(|(rate, d)| (rate * d).round())
    else {
        return;
    };
    let requests = get("requests_ok")
        .zip(get("requests_failed"))
        .map(|(a, b)| a + b)
        .filter(|n| *n > 0.0);
    values.insert("good_requests".into(), Some(good));
    if let Some(n) = requests {
        values.insert("slo_attainment".into(), Some(good / n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_run_gets_its_good_requests_and_attainment() {
        let mut old: BTreeMap<String, Option<f64>> = [
            ("goodput_rps", Some(36.0 / 1.7)),
            ("duration_s", Some(1.7)),
            ("requests_ok", Some(38.0)),
            ("requests_failed", Some(2.0)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        backfill(&mut old);
        assert_eq!(old["good_requests"], Some(36.0));
        assert_eq!(old["slo_attainment"], Some(0.9));
        // A run that stored them keeps its own; an empty one gets nothing.
        let mut new = old.clone();
        new.insert("slo_attainment".into(), Some(0.5));
        backfill(&mut new);
        assert_eq!(new["slo_attainment"], Some(0.5));
        let mut empty = BTreeMap::new();
        backfill(&mut empty);
        assert!(empty.is_empty());
        let mut partial = BTreeMap::from([("ttft_p50".to_string(), Some(10.0))]);
        backfill(&mut partial);
        assert_eq!(partial.len(), 1);
    }
}
