//! Gates against a history: `ttft_p99 <= median(last 5) +5%` holds when the newest
//! release's value of every run is at most the median of the same run's values in the
//! five releases before it, plus 5%. The statistic is `median`, `mean`, `min` or `max`;
//! the comparison `<=`, `<`, `>=` or `>`; the margin optional (`+5%`, `-2.5%`). A run
//! with no earlier value, or none in the newest release, is not judged; an invalid run's
//! value counts nowhere (neither as the newest nor in the window).

use std::fmt::Write;

use super::history::History;
use super::ReportError;
use crate::metrics::{names, stats};

/// The statistic a gate compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stat {
    Median,
    Mean,
    Min,
    Max,
}

impl Stat {
    fn of(self, values: &mut [f64]) -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        // The metrics' own statistics (a median is their p50).
        let name = match self {
            Stat::Median => "p50",
            Stat::Mean => "mean",
            Stat::Min => "min",
            Stat::Max => "max",
        };
        stats::statistic(values, name)
    }
}

/// One gate as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryGate {
    pub text: String,
    pub metric: String,
    pub op: String,
    pub stat: Stat,
    /// Releases before the newest the statistic is over.
    pub last: usize,
    /// The margin in percent of the statistic (`+5%` → 5.0).
    pub margin_pct: f64,
}

/// One gate judged on one run.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOutcome {
    pub gate: String,
    pub run: String,
    pub value: Option<f64>,
    /// The statistic with its margin applied.
    pub limit: Option<f64>,
    /// `None`: not judged (no newest value, or no earlier one).
    pub passed: Option<bool>,
}

fn syntax(text: &str) -> ReportError {
    ReportError::HistoryGate {
        text: text.to_string(),
    }
}

impl HistoryGate {
    /// Parses `METRIC OP STAT(last N) [±PCT%]`.
    pub fn parse(text: &str) -> Result<HistoryGate, ReportError> {
        let t = text.trim();
        let op_at = t.find(['<', '>']).ok_or_else(|| syntax(text))?;
        let metric = t[..op_at].trim().to_string();
        let rest = &t[op_at..];
        let op = if rest.starts_with("<=") || rest.starts_with(">=") {
            &rest[..2]
        } else {
            &rest[..1]
        };
        let rest = rest[op.len()..].trim();
        let open = rest.find('(').ok_or_else(|| syntax(text))?;
        let close = rest.find(')').ok_or_else(|| syntax(text))?;
        let stat = match rest[..open].trim() {
            "median" => Stat::Median,
            "mean" => Stat::Mean,
            "min" => Stat::Min,
            "max" => Stat::Max,
            _ => return Err(syntax(text)),
        };
        let inner = rest
            .get(open + 1..close)
            .ok_or_else(|| syntax(text))?
            .trim();
        let last: usize = inner
            .strip_prefix("last")
            .and_then(|n| n.trim().parse().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| syntax(text))?;
        let margin = rest[close + 1..].replace(' ', "");
        let margin_pct = match margin.as_str() {
            "" => 0.0,
            m => m
                .strip_suffix('%')
                .and_then(|p| p.parse::<f64>().ok())
                .filter(|_| m.starts_with(['+', '-']))
                .ok_or_else(|| syntax(text))?,
        };
        if !names::is_metric_or_class(&metric) {
            return Err(super::unknown_metric(&metric));
        }
        Ok(HistoryGate {
            text: t.to_string(),
            metric,
            op: op.to_string(),
            stat,
            last,
            margin_pct,
        })
    }

    /// The gate on every run of the history that has its metric.
    pub(crate) fn evaluate(&self, h: &History) -> Vec<GateOutcome> {
        h.lines
            .iter()
            .filter(|l| l.metric == self.metric)
            .map(|line| {
                let values: Vec<Option<f64>> = line
                    .points
                    .iter()
                    .map(|p| {
                        p.as_ref()
                            .filter(|p| p.verdict != "invalid")
                            .and_then(|p| p.value)
                    })
                    .collect();
                let (newest, earlier) = match values.split_last() {
                    Some((n, e)) => (*n, e),
                    None => (None, &[][..]),
                };
                let mut window: Vec<f64> = earlier
                    .iter()
                    .rev()
                    .take(self.last)
                    .flatten()
                    .copied()
                    .collect();
                let limit = self
                    .stat
                    .of(&mut window)
                    .map(|s| s + s.abs() * self.margin_pct / 100.0);
                let passed = newest.zip(limit).map(|(v, l)| match self.op.as_str() {
                    "<=" => v <= l,
                    "<" => v < l,
                    ">=" => v >= l,
                    _ => v > l,
                });
                GateOutcome {
                    gate: self.text.clone(),
                    run: line.run.clone(),
                    value: newest,
                    limit,
                    passed,
                }
            })
            .collect()
    }
}

/// The outcomes, one line each: `PASS ttft_p99 <= median(last 5) +5% · c8: 12.1 (limit 13.0)`.
pub fn render(outcomes: &[GateOutcome]) -> String {
    let mut s = String::from("history gates:\n");
    for o in outcomes {
        let word = match o.passed {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "not judged",
        };
        let num = |v: Option<f64>| v.map_or("—".to_string(), super::format::number);
        let _ = writeln!(
            s,
            "  {word:<10} {} · {}: {} (limit {})",
            o.gate,
            o.run,
            num(o.value),
            num(o.limit)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_form() {
        let g = HistoryGate::parse("ttft_p99 <= median(last 5) +5%").unwrap();
        assert_eq!(
            (
                g.metric.as_str(),
                g.op.as_str(),
                g.stat,
                g.last,
                g.margin_pct
            ),
            ("ttft_p99", "<=", Stat::Median, 5, 5.0)
        );
        let g = HistoryGate::parse("output_tps>=mean(last 3)-2.5%").unwrap();
        assert_eq!(
            (g.op.as_str(), g.stat, g.last, g.margin_pct),
            (">=", Stat::Mean, 3, -2.5)
        );
        let g = HistoryGate::parse("tpot_mean < max(last 1)").unwrap();
        assert_eq!(g.margin_pct, 0.0);
        for bad in [
            "ttft_p99 median(last 5)",
            "ttft_p99 <= avg(last 5)",
            "ttft_p99 <= median(last 0)",
            "ttft_p99 <= median(5)",
            "ttft_p99 <= median(last 5) 5%",
            "ttft_p99 <= median(last 5) +5",
            "ttft_p98x <= median(last 5)",
        ] {
            assert!(HistoryGate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn statistics() {
        assert_eq!(Stat::Median.of(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(Stat::Median.of(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(Stat::Mean.of(&mut [1.0, 3.0]), Some(2.0));
        assert_eq!(Stat::Max.of(&mut []), None);
    }
}
