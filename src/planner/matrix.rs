//! Matrix expansion with the semantics of GitHub Actions' matrix: the cartesian product
//! of the axes in the order written (first axis outermost), then `exclude` (a point
//! matching every key of an entry is dropped), then `include` (an entry whose keys that
//! are matrix axes all match a point extends it; an entry that extends no point is added
//! as a new point). Pure: values in, points out.

use serde_json::{Map, Value};

/// One point of the matrix: axis → value, in axis order (then keys added by `include`).
pub type Point = Map<String, Value>;

/// Whether a point's value matches an entry's: equal, or for tables, every key of the
/// entry's table equal in the point's (so `{ load = { concurrency = 8 } }` matches any
/// load with concurrency 8).
pub(crate) fn value_matches(point: &Value, entry: &Value) -> bool {
    match (point, entry) {
        (Value::Object(p), Value::Object(e)) => e
            .iter()
            .all(|(k, v)| p.get(k).is_some_and(|pv| value_matches(pv, v))),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => point == entry,
    }
}

fn entry_matches(point: &Point, entry: &Map<String, Value>, keys: impl Fn(&str) -> bool) -> bool {
    entry
        .iter()
        .filter(|(k, _)| keys(k))
        .all(|(k, v)| point.get(k).is_some_and(|pv| value_matches(pv, v)))
}

/// Merges `patch` into `base`: tables key by key (recursively), any other value replaces.
/// How an `extra` axis value lands on `[defaults].extra`.
pub(crate) fn merge_tables(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                match b.get_mut(k) {
                    Some(existing) => merge_tables(existing, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

/// The cartesian product, first axis outermost.
pub(crate) fn product(axes: &[(String, Vec<Value>)]) -> Vec<Point> {
    let mut points = vec![Point::new()];
    for (key, values) in axes {
        let mut next = Vec::with_capacity(points.len() * values.len());
        for point in &points {
            for value in values {
                let mut p = point.clone();
                p.insert(key.clone(), value.clone());
                next.push(p);
            }
        }
        points = next;
    }
    if axes.is_empty() {
        return vec![Point::new()];
    }
    points
}

/// The indices of `exclude` entries that drop no point of the product.
pub(crate) fn unmatched_excludes(
    axes: &[(String, Vec<Value>)],
    exclude: &[Map<String, Value>],
) -> Vec<usize> {
    let points = product(axes);
    (0..exclude.len())
        .filter(|&i| {
            !points
                .iter()
                .any(|p| entry_matches(p, &exclude[i], |_| true))
        })
        .collect()
}

/// Expands axes, then applies exclude and include.
pub fn expand(
    axes: &[(String, Vec<Value>)],
    exclude: &[Map<String, Value>],
    include: &[Map<String, Value>],
) -> Vec<Point> {
    let mut points: Vec<Point> = product(axes)
        .into_iter()
        .filter(|p| !exclude.iter().any(|e| entry_matches(p, e, |_| true)))
        .collect();
    let is_axis = |k: &str| axes.iter().any(|(a, _)| a == k);
    let original = points.len();
    for entry in include {
        let mut extended = false;
        for point in points.iter_mut().take(original) {
            if entry_matches(point, entry, is_axis) {
                for (k, v) in entry.iter().filter(|(k, _)| !is_axis(k)) {
                    point.insert(k.clone(), v.clone());
                }
                extended = true;
            }
        }
        if !extended {
            points.push(entry.clone());
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn axes(v: Value) -> Vec<(String, Vec<Value>)> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_array().unwrap().clone()))
            .collect()
    }

    fn entries(v: Value) -> Vec<Map<String, Value>> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_object().unwrap().clone())
            .collect()
    }

    fn points(v: &[Point]) -> Value {
        Value::Array(v.iter().cloned().map(Value::Object).collect())
    }

    #[test]
    fn product_first_axis_outermost() {
        let a = axes(json!({"endpoint": ["on", "off"], "c": [1, 2]}));
        let p = expand(&a, &[], &[]);
        assert_eq!(
            points(&p),
            json!([
                {"endpoint": "on", "c": 1}, {"endpoint": "on", "c": 2},
                {"endpoint": "off", "c": 1}, {"endpoint": "off", "c": 2}
            ])
        );
    }

    #[test]
    fn exclude_drops_points_matching_every_key() {
        let a = axes(json!({"endpoint": ["on", "off"], "cache_state": ["cold", "warm"]}));
        let ex = entries(json!([{"endpoint": "off", "cache_state": "warm"}]));
        let p = expand(&a, &ex, &[]);
        assert_eq!(p.len(), 3);
        assert!(!p.contains(
            &json!({"endpoint": "off", "cache_state": "warm"})
                .as_object()
                .unwrap()
                .clone()
        ));
    }

    #[test]
    fn excludes_that_drop_nothing_are_found() {
        let a =
            axes(json!({"endpoint": ["on", "off"], "load": [{"concurrency": 8, "requests": 64}]}));
        let ex = entries(json!([
            {"endpoint": "off"},
            {"load": {"concurrency": 16}},
            {"endpoint": "on", "load": {"concurrency": 8}},
            {"temperature": 0.5}
        ]));
        assert_eq!(unmatched_excludes(&a, &ex), [1, 3]);
    }

    #[test]
    fn exclude_matches_tables_by_subset() {
        let a = axes(
            json!({"load": [{"concurrency": 1, "requests": 8}, {"concurrency": 8, "requests": 64}]}),
        );
        let ex = entries(json!([{"load": {"concurrency": 8}}]));
        let p = expand(&a, &ex, &[]);
        assert_eq!(
            points(&p),
            json!([{"load": {"concurrency": 1, "requests": 8}}])
        );
    }

    /// GitHub's documented example: fruit × animal with includes.
    #[test]
    fn include_extends_matching_points_and_adds_unmatched() {
        let a = axes(json!({"fruit": ["apple", "pear"], "animal": ["cat", "dog"]}));
        let inc = entries(json!([
            {"color": "green"},
            {"color": "pink", "animal": "cat"},
            {"fruit": "apple", "shape": "circle"},
            {"fruit": "banana"},
            {"fruit": "banana", "animal": "cat"}
        ]));
        let p = expand(&a, &[], &inc);
        assert_eq!(
            points(&p),
            json!([
                {"fruit": "apple", "animal": "cat", "color": "pink", "shape": "circle"},
                {"fruit": "apple", "animal": "dog", "color": "green", "shape": "circle"},
                {"fruit": "pear", "animal": "cat", "color": "pink"},
                {"fruit": "pear", "animal": "dog", "color": "green"},
                {"fruit": "banana"},
                {"fruit": "banana", "animal": "cat"}
            ])
        );
    }

    #[test]
    fn include_that_adds_a_point() {
        let a = axes(json!({"endpoint": ["on"], "input_tokens": [1024]}));
        let inc = entries(json!([{"endpoint": "on", "input_tokens": 8192}]));
        let p = expand(&a, &[], &inc);
        assert_eq!(
            points(&p),
            json!([{"endpoint": "on", "input_tokens": 1024}, {"endpoint": "on", "input_tokens": 8192}])
        );
    }

    #[test]
    fn merge_tables_goes_key_by_key() {
        let mut base =
            json!({"chat_template_kwargs": {"enable_thinking": false, "x": 1}, "priority": 0});
        merge_tables(
            &mut base,
            &json!({"chat_template_kwargs": {"enable_thinking": true}, "priority": 5, "new": [1]}),
        );
        assert_eq!(
            base,
            json!({"chat_template_kwargs": {"enable_thinking": true, "x": 1}, "priority": 5, "new": [1]})
        );
    }

    #[test]
    fn no_axes_is_one_empty_point() {
        assert_eq!(expand(&[], &[], &[]), vec![Point::new()]);
    }
}
