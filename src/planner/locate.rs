//! Where a matrix point's value is written in the plan, so that problems found while
//! resolving a run point at the very value (the list item, or the include entry's value)
//! rather than at its axis. Pure: reads the plan's spanned tree.

use serde_json::Value;

use crate::plan::diag::Span;
use crate::plan::node::{Node, NodeKind, Step};
use crate::plan::LoadedPlan;

fn equal_in<'a>(node: &'a Node, value: &Value) -> Option<&'a Node> {
    if node.to_json() == *value {
        return Some(node);
    }
    match &node.kind {
        NodeKind::Seq(items) => items.iter().find(|n| n.to_json() == *value),
        _ => None,
    }
}

/// The span of the value `value` of `key` as written under `[matrix]`: an axis value or
/// one of its list items, else an `include` entry's value; else the axis key itself.
pub(crate) fn value_span(plan: &LoadedPlan, key: &str, value: &Value) -> Span {
    let matrix = plan.tree.get("matrix");
    let axis = matrix
        .and_then(|m| m.get(key))
        .and_then(|n| equal_in(n, value));
    let included = || {
        let Some(NodeKind::Seq(entries)) = matrix.and_then(|m| m.get("include")).map(|n| &n.kind)
        else {
            return None;
        };
        entries
            .iter()
            .filter_map(|e| e.get(key))
            .find(|n| n.to_json() == *value)
    };
    match axis.or_else(included) {
        Some(node) => node.span,
        None => plan.locate(&[Step::Key("matrix".into()), Step::Key(key.into())]),
    }
}

/// The span of the second item of the axis `key` equal to `value`, if the axis lists it
/// twice.
pub(crate) fn second_span(plan: &LoadedPlan, key: &str, value: &Value) -> Option<Span> {
    let axis = plan.tree.get("matrix")?.get(key)?;
    let NodeKind::Seq(items) = &axis.kind else {
        return None;
    };
    items
        .iter()
        .filter(|n| n.to_json() == *value)
        .nth(1)
        .map(|n| n.span)
}
