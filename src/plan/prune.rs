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
pub(crate) fn prune(tree: &Node, paths: &[Vec<Step>]) -> (Node, Vec<Span>) {
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

/// What was left out of a plan: where each value was written, and the tables that held
/// a faulty value (a value left out may leave its table lacking it: a later "needs …"
/// there is a consequence too).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pruned {
    pub spans: Vec<Span>,
    pub tables: Vec<Vec<Step>>,
}

impl Pruned {
    /// Records the table holding the value at `path` (not the top level).
    pub(crate) fn table_of(&mut self, path: &[Step]) {
        if path.len() >= 2 {
            self.tables.push(path[..path.len() - 1].to_vec());
        }
    }

    /// Whether `d`, found on the plan with these values left out (`tree`), is a
    /// consequence of leaving them out: at or around a value left out, or inside a table
    /// that held one.
    pub(crate) fn covers(&self, d: &Diagnostic, tree: &Node) -> bool {
        if overlaps(d, &self.spans) {
            return true;
        }
        let Some(span) = d.span else {
            return false;
        };
        let at = path_at(tree, span);
        self.tables.iter().any(|t| at.starts_with(t))
    }
}

/// The path of the deepest key or value of `tree` written where `span` starts.
pub(crate) fn path_at(tree: &Node, span: Span) -> Vec<Step> {
    let holds = |s: Span| s.file == span.file && s.start <= span.start && span.start < s.end;
    fn walk(node: &Node, holds: &dyn Fn(Span) -> bool, path: &mut Vec<Step>, best: &mut Vec<Step>) {
        let children: Vec<(Step, Option<Span>, &Node)> = match &node.kind {
            NodeKind::Map(entries) => entries
                .iter()
                .map(|e| (Step::Key(e.key.clone()), Some(e.key_span), &e.value))
                .collect(),
            NodeKind::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| (Step::Index(i), None, item))
                .collect(),
            _ => Vec::new(),
        };
        for (step, key_span, child) in children {
            path.push(step);
            let here = key_span.is_some_and(holds) || holds(child.span);
            if here && path.len() > best.len() {
                *best = path.clone();
            }
            walk(child, holds, path, best);
            path.pop();
        }
    }
    let mut best = Vec::new();
    walk(tree, &holds, &mut Vec::new(), &mut best);
    best
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
pub(crate) fn overlaps(d: &Diagnostic, pruned: &[Span]) -> bool {
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
    fn a_problem_inside_a_table_that_held_a_faulty_value_is_a_consequence() {
        let file = Span::new(0, 0, 0);
        let mut tree = Node::from_json(&json!({"d": {"kind": "x", "turns": 1}}), file);
        // Spans of their own: the table's keys at 10.., the other table at 50...
        if let NodeKind::Map(top) = &mut tree.kind {
            if let NodeKind::Map(d) = &mut top[0].value.kind {
                d[0].key_span = Span::new(0, 10, 14);
                d[1].key_span = Span::new(0, 20, 25);
            }
        }
        let mut pruned = Pruned::default();
        pruned.table_of(&[key("d"), key("turns")]);
        assert_eq!(
            path_at(&tree, Span::new(0, 11, 12)),
            vec![key("d"), key("kind")]
        );
        let at_kind = Diagnostic::error("kind needs turns", Some(Span::new(0, 10, 14)));
        assert!(pruned.covers(&at_kind, &tree));
        let elsewhere = Diagnostic::error("x", Some(Span::new(0, 50, 51)));
        assert!(!pruned.covers(&elsewhere, &tree));
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
