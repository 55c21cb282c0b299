//! `imports = ["common/endpoints.toml"]`: merges the tables of other plan files (paths
//! relative to the importing file). A key defined in two places is an error naming both.

use super::diag::{Diagnostic, Sources};
use super::node::{Entry, Node, NodeKind};

/// Merges `other` into `base`; conflicting keys become diagnostics.
pub fn merge(
    base: &mut Node,
    other: Node,
    sources: &Sources,
    path: &mut Vec<String>,
    diags: &mut Vec<Diagnostic>,
) {
    let (NodeKind::Map(into), NodeKind::Map(from)) = (&mut base.kind, other.kind) else {
        return;
    };
    for entry in from {
        match into.iter_mut().find(|e| e.key == entry.key) {
            None => into.push(entry),
            Some(existing) => {
                path.push(entry.key.clone());
                let both_tables = matches!(existing.value.kind, NodeKind::Map(_))
                    && matches!(entry.value.kind, NodeKind::Map(_));
                if both_tables {
                    merge(&mut existing.value, entry.value, sources, path, diags);
                } else {
                    diags.push(conflict(existing, &entry, sources, path));
                }
                path.pop();
            }
        }
    }
}

fn conflict(first: &Entry, second: &Entry, sources: &Sources, path: &[String]) -> Diagnostic {
    let (line, col) = sources.line_col(first.key_span.file, first.key_span.start);
    let name = sources
        .files
        .get(first.key_span.file)
        .map_or("?", |s| s.name.as_str());
    Diagnostic::error(
        format!("`{}` is defined in two places", path.join(".")),
        Some(second.key_span),
    )
    .with_label("defined again here")
    .with_help(format!(
        "first defined at {name}:{line}:{col}; keep one of them"
    ))
}

/// The `imports` list of a file, removed from its tree.
pub(crate) fn take_imports(
    root: &mut Node,
) -> Result<Vec<(String, super::diag::Span)>, Diagnostic> {
    let NodeKind::Map(entries) = &mut root.kind else {
        return Ok(Vec::new());
    };
    let Some(pos) = entries.iter().position(|e| e.key == "imports") else {
        return Ok(Vec::new());
    };
    let entry = entries.remove(pos);
    let NodeKind::Seq(items) = entry.value.kind else {
        return Err(Diagnostic::error(
            "`imports` must be a list of file paths",
            Some(entry.value.span),
        ));
    };
    items
        .into_iter()
        .map(|item| match item.kind {
            NodeKind::Str(s) => Ok((s, item.span)),
            _ => Err(Diagnostic::error(
                "`imports` entries must be file paths (strings)",
                Some(item.span),
            )),
        })
        .collect()
}
