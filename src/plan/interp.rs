//! `${VAR}` and `${VAR:-default}` in string values, from the environment.
//! `$${` writes a literal `${`. An unset variable without a default is an error naming it.

use super::diag::{Diagnostic, Span};
use super::node::{Node, NodeKind};

/// Expands every string in the tree; returns the problems found.
pub(crate) fn interpolate(
    node: &mut Node,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    walk(node, env, &mut diags);
    diags
}

fn walk(node: &mut Node, env: &dyn Fn(&str) -> Option<String>, diags: &mut Vec<Diagnostic>) {
    let span = node.span;
    match &mut node.kind {
        NodeKind::Str(s) if s.contains('$') => match expand(s, env) {
            Ok(out) => *s = out,
            Err(msg) => diags.push(located(msg, span)),
        },
        NodeKind::Seq(items) => items.iter_mut().for_each(|n| walk(n, env, diags)),
        NodeKind::Map(entries) => entries
            .iter_mut()
            .for_each(|e| walk(&mut e.value, env, diags)),
        _ => {}
    }
}

fn located(msg: String, span: Span) -> Diagnostic {
    Diagnostic::error(msg, Some(span))
}

/// Expands one string.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            out.push_str("${");
            rest = tail;
            continue;
        }
        let Some(body_start) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let end = body_start.find('}').ok_or_else(|| {
            format!("unclosed `${{` in `{text}`: write `${{VAR}}` or `$${{` for a literal")
        })?;
        let body = &body_start[..end];
        let (name, default) = match body.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (body, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("invalid variable name `{name}` in `${{{body}}}`"));
        }
        match (env(name).filter(|v| !v.is_empty() || default.is_none()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "environment variable `{name}` is not set (set it, or write `${{{name}:-default}}`)"
                ))
            }
        }
        rest = &body_start[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("10.0.0.1".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_and_defaults() {
        assert_eq!(
            expand("http://${HOST}:${PORT:-18000}", &env).unwrap(),
            "http://10.0.0.1:18000"
        );
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(
            expand("cost $5 and $${HOST}", &env).unwrap(),
            "cost $5 and ${HOST}"
        );
    }

    #[test]
    fn unset_without_default_names_the_variable() {
        let err = expand("${TOKENIZER_PATH}", &env).unwrap_err();
        assert!(err.contains("`TOKENIZER_PATH` is not set"), "{err}");
        assert!(expand("${HOST", &env).is_err());
        assert!(expand("${A B}", &env).is_err());
    }
}
