//! `prefix_groups` and `prefix_weights` of a `random` dataset: their typed form and the
//! checks beyond the schema (the schema bounds the count and each list's length).

use super::ranges::MAX_GROUP_PREFIX_TOKENS;
use super::spec::{DatasetKind, DatasetSpec};

/// How a run's requests spread over its shared prefixes.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixGroups {
    /// Distinct shared prefixes (1: one for the whole run, as without the key).
    pub count: u32,
    /// One weight per group; empty: round robin.
    pub weights: Vec<f64>,
}

impl Default for PrefixGroups {
    fn default() -> Self {
        PrefixGroups {
            count: 1,
            weights: Vec::new(),
        }
    }
}

impl PrefixGroups {
    /// The typed groups of `spec` (validation has checked them).
    pub fn of(spec: &DatasetSpec) -> PrefixGroups {
        PrefixGroups {
            count: spec.prefix_groups.unwrap_or(1).max(1),
            weights: spec.prefix_weights.clone().unwrap_or_default(),
        }
    }
}

/// Problems of the two keys as written (or as resolved for a run): `(key, message)`.
/// `supplied` says which keys a matrix axis gives.
pub fn problems(ds: &DatasetSpec, supplied: impl Fn(&str) -> bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // Another kind that sets them is told they do not apply (`dataset_keys`), once.
    if ds.kind != DatasetKind::Random {
        return out;
    }
    let groups = ds.prefix_groups;
    if groups == Some(0) {
        out.push((
            "prefix_groups".into(),
            "prefix_groups must be at least 1 (1 is one shared prefix for the run)".into(),
        ));
    }
    if groups.is_some() && ds.prefix_tokens.is_none() && !supplied("prefix_tokens") {
        out.push((
            "prefix_groups".into(),
            "`prefix_groups` needs `prefix_tokens` (the length of each group's shared prefix)"
                .into(),
        ));
    }
    if let Some(weights) = &ds.prefix_weights {
        match groups {
            None if !supplied("prefix_groups") => out.push((
                "prefix_weights".into(),
                "`prefix_weights` needs `prefix_groups` (one weight per group)".into(),
            )),
            Some(n) if n as usize != weights.len() => out.push((
                "prefix_weights".into(),
                format!(
                    "prefix_weights has {} entries but prefix_groups is {n}: give one weight \
                     per group",
                    weights.len()
                ),
            )),
            _ => {}
        }
        if let Some(w) = weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
            out.push((
                "prefix_weights".into(),
                format!("prefix_weights must all be positive numbers; {w} is not"),
            ));
        } else if !weights.iter().sum::<f64>().is_finite() {
            out.push((
                "prefix_weights".into(),
                "prefix_weights add up to more than a number can hold: scale them down \
                 (only their proportions count)"
                    .into(),
            ));
        }
    }
    if let (Some(n), Some(p)) = (groups, ds.prefix_tokens) {
        if u64::from(n) * u64::from(p) > MAX_GROUP_PREFIX_TOKENS {
            out.push((
                "prefix_groups".into(),
                format!(
                    "prefix_groups × prefix_tokens is {} tokens, more than the {} the group \
                     prefixes may take together (they are built before the run): use fewer \
                     or shorter prefixes",
                    u64::from(n) * u64::from(p),
                    MAX_GROUP_PREFIX_TOKENS
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(v: serde_json::Value) -> Vec<String> {
        let spec: DatasetSpec = serde_json::from_value(v).unwrap();
        problems(&spec, |_| false)
            .into_iter()
            .map(|(k, m)| format!("{k}: {m}"))
            .collect()
    }

    #[test]
    fn every_rule_names_its_key() {
        let base = json!({"kind": "random", "input_tokens": 64, "prefix_tokens": 16});
        let with = |extra: serde_json::Value| {
            let mut v = base.clone();
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            keys(v)
        };
        assert!(with(json!({"prefix_groups": 4})).is_empty());
        assert!(with(json!({"prefix_groups": 2, "prefix_weights": [3, 1]})).is_empty());
        let zero = with(json!({"prefix_groups": 0}));
        assert!(zero[0].starts_with("prefix_groups: ") && zero[0].contains("at least 1"));
        let short = with(json!({"prefix_groups": 3, "prefix_weights": [1, 1]}));
        assert_eq!(short.len(), 1);
        assert!(
            short[0].contains("has 2 entries but prefix_groups is 3"),
            "{short:?}"
        );
        let negative = with(json!({"prefix_groups": 2, "prefix_weights": [1, -1]}));
        assert!(negative[0].contains("-1 is not"), "{negative:?}");
        let alone = with(json!({"prefix_weights": [1.0]}));
        assert!(alone[0].starts_with("prefix_weights: `prefix_weights` needs `prefix_groups`"));
        let big = with(json!({"prefix_groups": 4096, "prefix_tokens": 1000}));
        assert!(big[0].contains("4096000 tokens"), "{big:?}");
        let bare = keys(json!({"kind": "random", "input_tokens": 64, "prefix_groups": 2}));
        assert!(bare[0].contains("needs `prefix_tokens`"), "{bare:?}");
        let huge = with(json!({"prefix_groups": 2, "prefix_weights": [1e308, 1e308]}));
        assert!(huge[0].contains("scale them down"), "{huge:?}");
        // Other kinds hear once that the keys do not apply (`dataset_keys`), not here.
        assert!(keys(json!({"kind": "lines", "path": "x", "prefix_groups": 2})).is_empty());
    }
}
