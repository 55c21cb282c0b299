//! The rule of values that cannot be: a record's times out of order (the evidence), a
//! distribution whose percentiles do not rise, a negative figure, a ratio above one, an
//! output longer than `max_tokens` under `ignore_eos`. Each is perfplan's own error (or
//! a server's impossible usage) and is said as one.

use super::code::Code;
use super::judge::RunFacts;
use super::warning::RunWarning;

/// The statistics of a distribution, in the order their values must not fall.
const ORDER: &[&str] = &[
    "min", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999", "max",
];
const QUANTITIES: &[&str] = &[
    "ttft",
    "tpot",
    "itl",
    "latency",
    "input_tokens",
    "output_tokens",
];

fn value(f: &RunFacts<'_>, name: &str) -> Option<f64> {
    f.values?.get(name).copied().flatten()
}

/// The first percentile pair out of order, or negative value, or ratio above one.
fn misordered(f: &RunFacts<'_>) -> Option<String> {
    let values = f.values?;
    for q in QUANTITIES {
        let mut last: Option<(&str, f64)> = None;
        for stat in ORDER {
            let Some(v) = value(f, &format!("{q}_{stat}")) else {
                continue;
            };
            if let Some((prev, p)) = last {
                // Percentiles are interpolated: allow rounding, never a real fall.
                if v + 1e-9 * p.abs().max(1.0) < p {
                    return Some(format!("{q}_{stat} {v} is below {q}_{prev} {p}"));
                }
            }
            last = Some((stat, v));
        }
    }
    for (name, v) in values.iter().filter_map(|(k, v)| Some((k, (*v)?))) {
        if v < 0.0 && !name.contains("delta") {
            return Some(format!("{name} is negative ({v})"));
        }
        if (name.ends_with("_ratio") || name.ends_with("_share")) && v > 1.0 + 1e-9 {
            return Some(format!("{name} is above 1 ({v})"));
        }
    }
    None
}

pub(super) fn impossible(f: &RunFacts<'_>) -> Option<RunWarning> {
    let e = &f.evidence;
    let seen = if let Some(x) = e.impossible_example.as_ref().filter(|_| e.impossible > 0) {
        format!(
            "{} requests' times cannot be (request {}: {})",
            e.impossible, x.request, x.seen
        )
    } else if let Some(why) = misordered(f) {
        why
    } else if let (Some(limit), Some(max)) = (f.output_limit, value(f, "output_tokens_max")) {
        if max > f64::from(limit) {
            format!(
                "a request got {max} output tokens though max_tokens was {limit} with ignore_eos"
            )
        } else {
            return None;
        }
    } else {
        return None;
    };
    Some(RunWarning::new(
        Code::ImpossibleValues,
        format!(
            "{seen}: a value that cannot be, which is an internal error of perfplan (or a \
             server's impossible usage); please report it with the results database"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn judged(pairs: &[(&str, f64)], limit: Option<u32>) -> Option<String> {
        let values: BTreeMap<String, Option<f64>> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Some(*v)))
            .collect();
        let f = RunFacts {
            values: Some(&values),
            output_limit: limit,
            ..RunFacts::default()
        };
        impossible(&f).map(|w| w.text)
    }

    #[test]
    fn falling_percentiles_negatives_and_long_outputs_cannot_be() {
        assert_eq!(
            judged(&[("ttft_p50", 10.0), ("ttft_p99", 20.0)], None),
            None
        );
        let w = judged(&[("ttft_p50", 10.0), ("ttft_p99", 9.0)], None).unwrap_or_default();
        assert!(w.starts_with("ttft_p99 9 is below ttft_p50 10"), "{w}");
        assert!(judged(&[("rps", -1.0)], None).is_some());
        assert!(judged(&[("success_ratio", 1.5)], None).is_some());
        assert!(judged(&[("output_tokens_max", 33.0)], Some(32)).is_some());
        assert!(judged(&[("output_tokens_max", 32.0)], Some(32)).is_none());
    }
}
