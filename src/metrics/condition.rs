//! Gate and SLO conditions: `"<= 2s"`, `"< 150ms"`, `">= 0.999"`, `"== 0"`, and
//! relative ones against a baseline, `">= -5%"`. Durations are converted to the
//! metric's unit (milliseconds for time quantities, seconds for `duration_s`).
//! Pure parsing and arithmetic; knows nothing about runs, storage or output.

use std::fmt;

use super::names;

pub use super::registry::{unit_of, MetricUnit};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }

    pub(crate) fn holds(self, left: f64, right: f64) -> bool {
        match self {
            Op::Lt => left < right,
            Op::Le => left <= right,
            Op::Gt => left > right,
            Op::Ge => left >= right,
            Op::Eq => left == right,
            Op::Ne => left != right,
        }
    }
}

/// What the value is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A value in the metric's unit.
    Absolute(f64),
    /// A change from the baseline, in percent (`-5` for `-5%`).
    RelativePercent(f64),
}

/// One parsed condition on one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub metric: String,
    pub op: Op,
    pub threshold: Threshold,
    /// The condition as written.
    pub text: String,
}

/// Why a condition could not be read or checked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConditionError {
    #[error("unknown metric `{metric}` in condition `{text}`{}", hint(suggestion))]
    UnknownMetric {
        metric: String,
        text: String,
        suggestion: Option<String>,
    },
    #[error("invalid condition `{text}` for `{metric}`: {reason} (write e.g. \"<= 2s\", \">= 0.999\", \">= -5%\")")]
    Syntax {
        metric: String,
        text: String,
        reason: String,
    },
    #[error("condition `{text}` on `{metric}` is relative and needs a baseline (--baseline DB)")]
    NoBaseline { metric: String, text: String },
    #[error("condition `{text}` on `{metric}` is relative but the baseline value is 0")]
    ZeroBaseline { metric: String, text: String },
}

fn hint(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

fn nearest_metric(metric: &str) -> Option<String> {
    let all = names::all_names();
    let (name, class) = names::split_class(metric);
    let near = crate::suggest::nearest(name, all.iter().map(String::as_str))?;
    Some(match class {
        Some(class) => names::class_metric(near, class),
        None => near.to_string(),
    })
}

/// Parses `text` as a condition on `metric`.
pub(crate) fn parse_condition(metric: &str, text: &str) -> Result<Condition, ConditionError> {
    let unit = unit_of(metric).ok_or_else(|| ConditionError::UnknownMetric {
        metric: metric.into(),
        text: text.into(),
        suggestion: nearest_metric(metric),
    })?;
    let syntax = |reason: &str| ConditionError::Syntax {
        metric: metric.into(),
        text: text.into(),
        reason: reason.into(),
    };
    let t = text.trim();
    if matches!(t, "min" | "max") {
        return Err(syntax(
            "`min` and `max` are objectives of an SLA search's `slo` (load = { search = ..., slo = { ... } }), not conditions",
        ));
    }
    let (op, rest) = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Eq),
    ]
    .into_iter()
    .find_map(|(s, op)| t.strip_prefix(s).map(|rest| (op, rest.trim())))
    .ok_or_else(|| syntax("it must start with <, <=, >, >=, == or !="))?;
    let split = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(split);
    if number.is_empty() {
        return Err(syntax("a number is missing after the operator"));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| syntax(&format!("`{number}` is not a number")))?;
    if !value.is_finite() {
        return Err(syntax("the number is out of range"));
    }
    let threshold = match suffix.trim() {
        "" => Threshold::Absolute(value),
        "%" => Threshold::RelativePercent(value),
        u => Threshold::Absolute(convert(value, u, unit).ok_or_else(|| {
            syntax(&format!(
                "unit `{u}` does not fit `{metric}` ({})",
                unit_name(unit)
            ))
        })?),
    };
    Ok(Condition {
        metric: metric.into(),
        op,
        threshold,
        text: t.into(),
    })
}

fn unit_name(unit: MetricUnit) -> &'static str {
    match unit {
        MetricUnit::Millis => "a time in ms; write s, ms or us",
        MetricUnit::Seconds => "a time in s; write s, ms or us",
        MetricUnit::Ratio => "a ratio from 0 to 1, no unit",
        MetricUnit::Tokens => "tokens, no unit",
        MetricUnit::TokensPerSec => "tokens per second; tok/s or no unit",
        MetricUnit::RequestsPerSec => "requests per second; req/s or no unit",
        MetricUnit::Count => "a count, no unit",
        MetricUnit::Watts => "watts; W or no unit",
        MetricUnit::JoulesPerToken => "joules per output token; J or no unit",
        MetricUnit::TokensPerJoule => "output tokens per joule; tok/J or no unit",
        MetricUnit::CostPerMillionTokens => {
            "cost per million tokens (the currency of hardware.cost_per_hour), no unit"
        }
    }
}

/// `value` written in `suffix`, in the metric's unit.
fn convert(value: f64, suffix: &str, unit: MetricUnit) -> Option<f64> {
    let seconds = match suffix {
        "us" | "µs" => Some(1e-6),
        "ms" => Some(1e-3),
        "s" => Some(1.0),
        "m" | "min" => Some(60.0),
        _ => None,
    };
    match (unit, seconds, suffix) {
        (MetricUnit::Millis, Some(s), _) => Some(value * s * 1000.0),
        (MetricUnit::Seconds, Some(s), _) => Some(value * s),
        (MetricUnit::TokensPerSec, _, "tok/s") => Some(value),
        (MetricUnit::RequestsPerSec, _, "req/s") => Some(value),
        (MetricUnit::Watts, _, "W") => Some(value),
        (MetricUnit::JoulesPerToken, _, "J") => Some(value),
        (MetricUnit::TokensPerJoule, _, "tok/J") => Some(value),
        _ => None,
    }
}

impl Condition {
    pub(crate) fn is_relative(&self) -> bool {
        matches!(self.threshold, Threshold::RelativePercent(_))
    }

    /// Whether `value` meets the condition. A relative condition compares the change
    /// from `baseline` in percent, `(value − baseline) / |baseline| × 100`.
    pub fn check(&self, value: f64, baseline: Option<f64>) -> Result<bool, ConditionError> {
        match self.threshold {
            Threshold::Absolute(limit) => Ok(self.op.holds(value, limit)),
            Threshold::RelativePercent(limit) => {
                let base = baseline.ok_or_else(|| ConditionError::NoBaseline {
                    metric: self.metric.clone(),
                    text: self.text.clone(),
                })?;
                let change =
                    relative_change(value, base).ok_or_else(|| ConditionError::ZeroBaseline {
                        metric: self.metric.clone(),
                        text: self.text.clone(),
                    })?;
                Ok(self.op.holds(change, limit))
            }
        }
    }
}

/// `(value − baseline) / |baseline| × 100`; 0 when both are 0; `None` when only the baseline is.
pub(crate) fn relative_change(value: f64, baseline: f64) -> Option<f64> {
    if baseline == 0.0 {
        return (value == 0.0).then_some(0.0);
    }
    Some((value - baseline) / baseline.abs() * 100.0)
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.metric, self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_absolute_with_units() {
        let c = parse_condition("ttft_p99", "<= 2s").unwrap();
        assert_eq!((c.op, c.threshold), (Op::Le, Threshold::Absolute(2000.0)));
        let c = parse_condition("tpot_mean", "< 150ms").unwrap();
        assert_eq!((c.op, c.threshold), (Op::Lt, Threshold::Absolute(150.0)));
        let c = parse_condition("itl_p50", "<500us").unwrap();
        assert_eq!(c.threshold, Threshold::Absolute(0.5));
        let c = parse_condition("duration_s", "<= 1500ms").unwrap();
        assert_eq!(c.threshold, Threshold::Absolute(1.5));
        let c = parse_condition("success_ratio", ">= 0.999").unwrap();
        assert_eq!((c.op, c.threshold), (Op::Ge, Threshold::Absolute(0.999)));
        let c = parse_condition("requests_failed", "== 0").unwrap();
        assert_eq!((c.op, c.threshold), (Op::Eq, Threshold::Absolute(0.0)));
        let c = parse_condition("output_tps", ">= 1000 tok/s").unwrap();
        assert_eq!(c.threshold, Threshold::Absolute(1000.0));
    }

    #[test]
    fn parses_relative() {
        let c = parse_condition("output_tps", ">= -5%").unwrap();
        assert_eq!(
            (c.op, c.threshold),
            (Op::Ge, Threshold::RelativePercent(-5.0))
        );
        assert!(c.is_relative());
        let c = parse_condition("ttft_p99", "<= +10%").unwrap();
        assert_eq!(c.threshold, Threshold::RelativePercent(10.0));
    }

    #[test]
    fn errors_name_the_text() {
        let e = parse_condition("ttft_p99", "about 2s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`about 2s`") && e.contains("ttft_p99"), "{e}");
        let e = parse_condition("success_ratio", ">= 2s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unit `s`"), "{e}");
        let e = parse_condition("ttft_p98", "<= 2s")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`ttft_p98`") && e.contains("did you mean"),
            "{e}"
        );
        let e = parse_condition("ttft_p99", "<= ").unwrap_err().to_string();
        assert!(e.contains("number is missing"), "{e}");
        let e = parse_condition("ttft_p99", "<= 2 parsecs")
            .unwrap_err()
            .to_string();
        assert!(e.contains("parsecs"), "{e}");
    }

    #[test]
    fn checks_absolute_and_relative() {
        let c = parse_condition("ttft_p99", "<= 2s").unwrap();
        assert!(c.check(2000.0, None).unwrap());
        assert!(!c.check(2000.5, None).unwrap());
        let c = parse_condition("output_tps", ">= -5%").unwrap();
        assert!(c.check(96.0, Some(100.0)).unwrap());
        assert!(c.check(95.0, Some(100.0)).unwrap());
        assert!(!c.check(94.9, Some(100.0)).unwrap());
        assert!(matches!(
            c.check(1.0, None),
            Err(ConditionError::NoBaseline { .. })
        ));
        assert!(matches!(
            c.check(1.0, Some(0.0)),
            Err(ConditionError::ZeroBaseline { .. })
        ));
        assert!(c.check(0.0, Some(0.0)).unwrap());
    }

    #[test]
    fn units_of_metrics() {
        assert_eq!(unit_of("ttft_p99"), Some(MetricUnit::Millis));
        assert_eq!(unit_of("lateness_p50"), Some(MetricUnit::Millis));
        assert_eq!(unit_of("input_tokens_mean"), Some(MetricUnit::Tokens));
        assert_eq!(unit_of("output_tps"), Some(MetricUnit::TokensPerSec));
        assert_eq!(unit_of("cache_hit_ratio"), Some(MetricUnit::Ratio));
        assert_eq!(unit_of("bogus"), None);
    }
}
