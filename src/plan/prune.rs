//! Leaving a plan's faulty values out, so that one `validate` reports every problem: the
//! schema's problems are found first, and the values they are about (an unknown key's
//! entry, a value of the wrong type or out of range, a table missing a key) are taken out
//! of a copy of the tree; what remains deserializes, and the checks after it (semantics,
//! files, the planner's) still run on it. A problem those later checks find at or around
//! a value left out is a consequence of leaving it out, not a problem of its own, and is
//! not reported (`overlaps`).

use std::cmp::Ordering;

use super::diag::{Diagnostic, Span};
use super::node::{Node, NodeKind, Step};

fn step_order(a: &Step, b: &Step) -> Ordering {
    match (a, b) {
        (Step::Index(x), Step::Index(y)) => x.cmp(y),
        (Step::Key(x), Step::Key(y)) => x.cmp(y),
        (Step::Key(_), Step::Index(_)) => Ordering::Less,
        (Step::Index(_), Step::Key(_)) => Ordering::Greater,
    }
}

fn path_order(a: &[Step], b: &[Step]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match step_order(x, y) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// A copy of `tree` without the values at `paths`, and where they were written. Later
/// list items go first, so that the indices of the others still hold; a path under one
/// already taken out is skipped.
pub fn prune(tree: &Node, paths: &[Vec<Step>]) -> (Node, Vec<Span>) {
    let mut sorted: Vec<&Vec<Step>> = paths.iter().collect();
    sorted.sort_by(|a, b| path_order(a, b));
    sorted.dedup();
    // Drop paths lying under another one.
    let mut kept: Vec<&Vec<Step>> = Vec::new();
    for p in sorted {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    let mut out = tree.clone();
    let mut spans = Vec::new();
    for p in kept.into_iter().rev() {
        spans.extend(remove(&mut out, p));
    }
    (out, spans)
}

/// Takes the value at `path` out of `tree` (its entry from a table, its item from a
/// list); returns where it was written (its key and value), or `None` when there is no
/// such value or the path is the whole tree.
pub fn remove(tree: &mut Node, path: &[Step]) -> Option<Span> {
    let (last, parent) = path.split_last()?;
    let mut node = tree;
    for step in parent {
        node = match (step, &mut node.kind) {
            (Step::Key(k), NodeKind::Map(entries)) => {
                &mut entries.iter_mut().find(|e| &e.key == k)?.value
            }
            (Step::Index(i), NodeKind::Seq(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    match (last, &mut node.kind) {
        (Step::Key(k), NodeKind::Map(entries)) => {
            let i = entries.iter().position(|e| &e.key == k)?;
            let e = entries.remove(i);
            let start = e.key_span.start.min(e.value.span.start);
            let end = e.key_span.end.max(e.value.span.end);
            Some(Span::new(e.value.span.file, start, end))
        }
        (Step::Index(i), NodeKind::Seq(items)) if *i < items.len() => Some(items.remove(*i).span),
        _ => None,
    }
}

/// Whether `d` is at or around a value left out (its span and one of `pruned` share a
/// byte, or one holds the other).
pub fn overlaps(d: &Diagnostic, pruned: &[Span]) -> bool {
    let Some(s) = d.span else {
        return false;
    };
    let (a0, a1) = (s.start, s.end.max(s.start + 1));
    pruned.iter().any(|p| {
        let (b0, b1) = (p.start, p.end.max(p.start + 1));
        p.file == s.file && a0 < b1 && b0 < a1
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> Step {
        Step::Key(k.to_string())
    }

    #[test]
    fn faulty_values_are_taken_out_later_items_first() {
        let tree = Node::from_json(
            &json!({"a": {"x": 1, "y": 2}, "list": [0, 1, 2, 3]}),
            Span::new(0, 0, 1),
        );
        let paths = vec![
            vec![key("list"), Step::Index(1)],
            vec![key("list"), Step::Index(3)],
            vec![key("a"), key("x")],
            vec![key("a"), key("x"), key("deeper")],
        ];
        let (out, spans) = prune(&tree, &paths);
        assert_eq!(out.to_json(), json!({"a": {"y": 2}, "list": [0, 2]}));
        assert_eq!(spans.len(), 3);
        let mut t = tree.clone();
        assert!(remove(&mut t, &[]).is_none());
        assert!(remove(&mut t, &[key("missing")]).is_none());
    }

    #[test]
    fn a_problem_around_a_value_left_out_overlaps_it() {
        let pruned = [Span::new(0, 10, 20)];
        let at = |s, e| Diagnostic::error("x", Some(Span::new(0, s, e)));
        assert!(overlaps(&at(0, 100), &pruned), "around it");
        assert!(overlaps(&at(12, 12), &pruned), "inside it");
        assert!(!overlaps(&at(20, 30), &pruned), "beside it");
        assert!(!overlaps(&Diagnostic::error("x", None), &pruned));
    }
}
