//! Relative gates (`">= -5%"`) need a baseline suite to compare with: a plan's relative
//! gate without one is a validation error, located at the gate, found before anything
//! runs (not after the whole suite, when every such gate would fail). For a ratio metric
//! the percent was most likely meant as a share: `success_ratio = ">= 99%"` gets "did you
//! mean `>= 0.99`?".

use super::diag::Diagnostic;
use super::node::{Node, Step};
use super::PlanSpec;
use crate::metrics::condition::{parse_condition, unit_of, MetricUnit, Threshold};

/// One diagnostic per relative gate of `spec`'s `[gates]` and of `cli` (`METRIC=COND`,
/// from `--gate`), when no baseline was given; nothing when one was.
pub(crate) fn without_baseline(
    spec: &PlanSpec,
    tree: &Node,
    cli: &[(String, String)],
    has_baseline: bool,
) -> Vec<Diagnostic> {
    if has_baseline {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (metric, text) in &spec.gates {
        let at = tree.value_span(&[Step::Key("gates".into()), Step::Key(metric.clone())]);
        out.extend(problem(metric, text, "[gates]").map(|mut d| {
            d.span = at;
            d
        }));
    }
    for (metric, text) in cli {
        out.extend(problem(metric, text, "--gate"));
    }
    out
}

fn problem(metric: &str, text: &str, source: &str) -> Option<Diagnostic> {
    let cond = parse_condition(metric, text).ok()?;
    let Threshold::RelativePercent(percent) = cond.threshold else {
        return None;
    };
    let d = Diagnostic::error(
        format!(
            "the {source} gate `{metric} = \"{text}\"` is relative (a change from a baseline \
             suite), and no baseline was given"
        ),
        None,
    );
    let help = if unit_of(metric) == Some(MetricUnit::Ratio) && percent > 0.0 {
        format!(
            "did you mean `{} {}`? (a share of 1) — or pass `--baseline DB` to compare with \
             an earlier suite",
            cond.op.as_str(),
            percent / 100.0
        )
    } else {
        "pass `--baseline DB` (an earlier suite's database or folder), or write an absolute \
         bound such as \"<= 2s\""
            .to_string()
    };
    Some(d.with_help(help))
}
