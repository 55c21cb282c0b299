//! Numeric and duration ranges of the schema, checked on the spanned tree: `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum` and the integer `format`s for
//! numbers; `x-duration-minimum` / `x-duration-maximum` for durations (strings with a
//! unit). A range on a key also bounds the `min` and `max` of its `{min, max}` form.
//! Every error names the value, the key and the whole range.

use std::time::Duration;

use serde_json::Value;

use super::diag::Diagnostic;
use super::node::{Node, NodeKind, Step};
use super::validate::where_;
use crate::units::parse_duration;

/// One end of a range: the bound and whether it is excluded.
#[derive(Debug, Clone, Copy, PartialEq)]
struct End {
    at: f64,
    exclusive: bool,
}

/// The number range a schema level states, if any.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Range {
    low: Option<End>,
    high: Option<End>,
}

impl Range {
    fn of(schema: &Value, with_format: bool) -> Range {
        let num = |k: &str| schema.get(k).and_then(Value::as_f64);
        let mut r = Range::default();
        if with_format {
            if let Some((lo, hi)) = format_range(schema.get("format").and_then(Value::as_str)) {
                r.low = Some(End {
                    at: lo,
                    exclusive: false,
                });
                r.high = Some(End {
                    at: hi,
                    exclusive: false,
                });
            }
        }
        let tighter_low = |cur: Option<End>, new: End| match cur {
            Some(c) if c.at > new.at || (c.at == new.at && c.exclusive) => Some(c),
            _ => Some(new),
        };
        let tighter_high = |cur: Option<End>, new: End| match cur {
            Some(c) if c.at < new.at || (c.at == new.at && c.exclusive) => Some(c),
            _ => Some(new),
        };
        for (key, exclusive) in [("minimum", false), ("exclusiveMinimum", true)] {
            if let Some(at) = num(key) {
                r.low = tighter_low(r.low, End { at, exclusive });
            }
        }
        for (key, exclusive) in [("maximum", false), ("exclusiveMaximum", true)] {
            if let Some(at) = num(key) {
                r.high = tighter_high(r.high, End { at, exclusive });
            }
        }
        r
    }

    fn is_empty(&self) -> bool {
        self.low.is_none() && self.high.is_none()
    }

    fn contains(&self, v: f64) -> bool {
        let low_ok = self
            .low
            .is_none_or(|e| if e.exclusive { v > e.at } else { v >= e.at });
        let high_ok = self
            .high
            .is_none_or(|e| if e.exclusive { v < e.at } else { v <= e.at });
        low_ok && high_ok
    }

    /// "from 1 to 100000", "above 0 and at most 1", "at least 0".
    fn text(&self) -> String {
        match (self.low, self.high) {
            (Some(l), Some(h)) if !l.exclusive && !h.exclusive => {
                format!("from {} to {}", num_text(l.at), num_text(h.at))
            }
            (Some(l), Some(h)) => format!("{} and {}", low_text(l), high_text(h)),
            (Some(l), None) => low_text(l),
            (None, Some(h)) => high_text(h),
            (None, None) => "any number".to_string(),
        }
    }
}

fn low_text(e: End) -> String {
    let word = if e.exclusive { "above" } else { "at least" };
    format!("{word} {}", num_text(e.at))
}

fn high_text(e: End) -> String {
    let word = if e.exclusive { "below" } else { "at most" };
    format!("{word} {}", num_text(e.at))
}

/// A bound as a person writes it: `1`, `0.001`, `1000000`.
fn num_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e16 {
        format!("{v:.0}")
    } else {
        v.to_string()
    }
}

fn format_range(format: Option<&str>) -> Option<(f64, f64)> {
    Some(match format? {
        "uint8" => (0.0, u8::MAX as f64),
        "uint16" => (0.0, u16::MAX as f64),
        "uint32" => (0.0, u32::MAX as f64),
        "uint64" | "uint" => (0.0, 9.2e18),
        "int32" => (i32::MIN as f64, i32::MAX as f64),
        "int64" => (-9.2e18, 9.2e18),
        _ => return None,
    })
}

fn value_text(node: &Node) -> String {
    match &node.kind {
        NodeKind::Int(i) => i.to_string(),
        NodeKind::Float(f) if *f != 0.0 && (f.abs() < 1e-4 || f.abs() >= 1e16) => format!("{f:e}"),
        NodeKind::Float(f) => f.to_string(),
        NodeKind::Str(s) => format!("\"{s}\""),
        _ => String::new(),
    }
}

/// Checks `node` against the ranges stated at this schema level. `false` when a value is
/// out of range (reported to `diags`).
pub(super) fn check(
    node: &Node,
    schema: &Value,
    path: &[Step],
    diags: &mut Vec<Diagnostic>,
) -> bool {
    match &node.kind {
        NodeKind::Int(_) | NodeKind::Float(_) => number(node, Range::of(schema, true), path, diags),
        NodeKind::Str(text) => duration(node, text, schema, path, diags),
        NodeKind::Map(entries) => {
            let range = Range::of(schema, false);
            if range.is_empty() {
                return true;
            }
            let mut ok = true;
            for e in entries.iter().filter(|e| e.key == "min" || e.key == "max") {
                if matches!(e.value.kind, NodeKind::Int(_) | NodeKind::Float(_)) {
                    let mut at = path.to_vec();
                    at.push(Step::Key(e.key.clone()));
                    ok &= number(&e.value, range, &at, diags);
                }
            }
            ok
        }
        _ => true,
    }
}

fn number(node: &Node, range: Range, path: &[Step], diags: &mut Vec<Diagnostic>) -> bool {
    let value = match node.kind {
        NodeKind::Int(i) => i as f64,
        NodeKind::Float(f) => f,
        _ => return true,
    };
    if !value.is_finite() {
        let must = if range.is_empty() {
            "a finite number".to_string()
        } else {
            range.text()
        };
        diags.push(
            Diagnostic::error(
                format!(
                    "value {} is not a number {}: must be {must}",
                    value_text(node),
                    where_(path)
                ),
                Some(node.span),
            )
            .with_label(format!("must be {must}")),
        );
        return false;
    }
    if range.is_empty() || range.contains(value) {
        return true;
    }
    let must = range.text();
    diags.push(
        Diagnostic::error(
            format!(
                "value {} out of range {}: must be {must}",
                value_text(node),
                where_(path)
            ),
            Some(node.span),
        )
        .with_label(format!("must be {must}")),
    );
    false
}

/// A duration bound: its value and its text as the schema writes it (`"168h"`).
fn duration_bound<'a>(schema: &'a Value, key: &str) -> Option<(Duration, &'a str)> {
    let text = schema.get(key)?.as_str()?;
    Some((parse_duration(text).ok()?, text))
}

fn duration_range_text(low: Option<(Duration, &str)>, high: Option<(Duration, &str)>) -> String {
    match (low, high) {
        (Some((_, l)), Some((_, h))) => format!("from {l} to {h}"),
        (Some((_, l)), None) => format!("at least {l}"),
        (None, Some((_, h))) => format!("at most {h}"),
        (None, None) => "any duration".to_string(),
    }
}

fn duration(
    node: &Node,
    text: &str,
    schema: &Value,
    path: &[Step],
    diags: &mut Vec<Diagnostic>,
) -> bool {
    let low = duration_bound(schema, "x-duration-minimum");
    let high = duration_bound(schema, "x-duration-maximum");
    if low.is_none() && high.is_none() {
        return true;
    }
    // A string that is not a duration is reported where it is read.
    let Ok(value) = parse_duration(text) else {
        return true;
    };
    if low.is_none_or(|(l, _)| value >= l) && high.is_none_or(|(h, _)| value <= h) {
        return true;
    }
    let must = duration_range_text(low, high);
    diags.push(
        Diagnostic::error(
            format!(
                "duration {} out of range {}: must be {must}",
                value_text(node),
                where_(path)
            ),
            Some(node.span),
        )
        .with_label(format!("must be {must}")),
    );
    false
}

/// The range a schema level states, as the book writes it (`from 1 to 100000`,
/// `from 1ms to 168h`), or `None` when it states none. For documentation and tests.
pub fn range_text(schema: &Value) -> Option<String> {
    let low = duration_bound(schema, "x-duration-minimum");
    let high = duration_bound(schema, "x-duration-maximum");
    if low.is_some() || high.is_some() {
        return Some(duration_range_text(low, high));
    }
    let explicit = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
        .iter()
        .any(|k| schema.get(*k).is_some());
    explicit.then(|| Range::of(schema, false).text())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn range_texts_name_both_ends() {
        let r = |v: Value| Range::of(&v, true).text();
        assert_eq!(
            r(json!({"format": "uint32", "minimum": 1, "maximum": 100000})),
            "from 1 to 100000"
        );
        assert_eq!(
            r(json!({"exclusiveMinimum": 0, "maximum": 1})),
            "above 0 and at most 1"
        );
        assert_eq!(r(json!({"minimum": 0.001})), "at least 0.001");
        let of = Range::of(&json!({"exclusiveMinimum": 0, "maximum": 1}), false);
        assert!(!of.contains(0.0) && of.contains(1e-9) && of.contains(1.0) && !of.contains(1.5));
    }

    #[test]
    fn format_range_is_tightened_by_explicit_bounds() {
        let r = Range::of(
            &json!({"format": "uint32", "minimum": 0, "maximum": 7}),
            true,
        );
        assert!(r.contains(7.0) && !r.contains(8.0) && !r.contains(-1.0));
    }
}
