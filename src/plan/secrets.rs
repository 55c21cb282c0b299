//! Secrets written into a plan: the value of a header whose name the one secret rule
//! calls secret (`crate::secrets::is_secret_header`) held literally in the plan file, an
//! import or a `--set`, instead of taken from the environment with `${VAR}`. Found once
//! the tree is read (interpolated, `--set` applied); each gets a warning naming the
//! `${VAR}` form to use. The texts perfplan stores hold that form in place of the value
//! (`rerun` reads the value from the variable), the texts diagnostics show hold it
//! masked, and every secret header value, literal or from the environment, joins the
//! plan's `Redactor` for logs and messages.

use serde::{Deserialize, Serialize};

use super::diag::{Diagnostic, Sources, Span};
use super::node::{Node, NodeKind};
use crate::secrets::{is_secret_header, secret_variable, Redactor};

/// A literal secret header value of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiteralSecret {
    pub endpoint: String,
    pub header: String,
    /// The variable it is stored as: `PERFPLAN_SECRET_<ENDPOINT>_<HEADER>`.
    pub variable: String,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    pub value: String,
}

/// The secrets of one plan.
#[derive(Debug, Clone, Default)]
pub struct PlanSecrets {
    pub literal: Vec<LiteralSecret>,
    /// Every secret header value of the plan.
    pub redactor: Redactor,
    /// Each source's text as stored (by file id): literal secrets as `${VAR}`.
    pub stored: Vec<String>,
}

impl PlanSecrets {
    /// Finds the secret headers of `tree`, whose spans point into `sources`.
    pub fn find(tree: &Node, sources: &Sources) -> PlanSecrets {
        let mut out = PlanSecrets::default();
        let endpoints = tree.get("endpoints").and_then(Node::map).unwrap_or(&[]);
        for ep in endpoints {
            let headers = ep.value.get("headers").and_then(Node::map).unwrap_or(&[]);
            for h in headers.iter().filter(|h| is_secret_header(&h.key)) {
                let NodeKind::Str(value) = &h.value.kind else {
                    continue;
                };
                out.redactor.add(value);
                let span = h.value.span;
                let raw = source_text(sources, span);
                if raw.contains("${") || value.is_empty() {
                    continue;
                }
                out.literal.push(LiteralSecret {
                    endpoint: ep.key.clone(),
                    header: h.key.clone(),
                    variable: secret_variable(&ep.key, &h.key),
                    span,
                    value: value.clone(),
                });
            }
        }
        out.stored = sources
            .files
            .iter()
            .enumerate()
            .map(|(file, src)| stored_text(file, &src.text, src.name == "--set", &out.literal))
            .collect();
        out
    }

    /// One warning per literal secret, with the `${VAR}` form to write instead.
    pub fn warnings(&self) -> Vec<Diagnostic> {
        self.literal
            .iter()
            .map(|s| {
                Diagnostic::warning(
                    format!(
                        "header `{}` of endpoint `{}` holds a literal secret: perfplan keeps it \
                         out of every file it writes (stored as `${{{}}}`), and `rerun` needs \
                         it from that variable",
                        s.header, s.endpoint, s.variable
                    ),
                    Some(s.span),
                )
                .with_help(format!(
                    "take it from the environment: {} = \"${{{}}}\" (any variable name works)",
                    toml_key(&s.header),
                    s.variable
                ))
            })
            .collect()
    }

    /// Masks every literal secret in `sources` (same length, so spans stay right) and
    /// gives `sources` the redactor, so that no diagnostic shows a secret.
    pub(crate) fn mask(&self, sources: &mut Sources) {
        for s in &self.literal {
            let Some(src) = sources.files.get_mut(s.span.file) else {
                continue;
            };
            let (start, end) = inner(&src.text, s.span, &s.value);
            let masked: String = "*".repeat(end - start);
            src.text.replace_range(start..end, &masked);
        }
        sources.redactor = self.redactor.clone();
    }
}

/// The text of a span (empty when it is not in the sources).
fn source_text(sources: &Sources, span: Span) -> &str {
    sources
        .files
        .get(span.file)
        .and_then(|s| s.text.get(span.start..span.end))
        .unwrap_or("")
}

/// The byte range of the value inside its span: the value as written when the span
/// holds it (between quotes, or bare), else the whole span.
fn inner(text: &str, span: Span, value: &str) -> (usize, usize) {
    let region = text.get(span.start..span.end).unwrap_or("");
    match region.find(value) {
        Some(at) if !value.is_empty() => (span.start + at, span.start + at + value.len()),
        _ => (span.start, span.end.min(text.len())),
    }
}

/// `text` (source `file`) with its literal secrets written as `${VAR}`: inside the
/// quotes when the value is written quoted, quoted when it is bare in a file, bare in a
/// `--set` (whose value `rerun` resolves itself).
fn stored_text(file: usize, text: &str, set: bool, secrets: &[LiteralSecret]) -> String {
    let mut spans: Vec<&LiteralSecret> = secrets.iter().filter(|s| s.span.file == file).collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.span.start));
    let mut out = text.to_string();
    for s in spans {
        let (start, end) = inner(text, s.span, &s.value);
        let region = text.get(s.span.start..s.span.end).unwrap_or("");
        let bare = region.trim() == s.value;
        let form = if bare && !set {
            format!("\"${{{}}}\"", s.variable)
        } else {
            format!("${{{}}}", s.variable)
        };
        if out.get(start..end).is_some() {
            out.replace_range(start..end, &form);
        }
    }
    out
}

/// A header name as a TOML key (quoted when it is not a bare key).
fn toml_key(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        name.to_string()
    } else {
        format!("\"{name}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets_of(name: &str, text: &str) -> (PlanSecrets, Sources) {
        let mut sources = Sources::default();
        let file = sources.add(name, text);
        let tree = if name.ends_with(".toml") {
            super::super::toml_src::parse(file, &sources.files[file].text).unwrap()
        } else {
            super::super::yaml_src::parse(file, &sources.files[file].text).unwrap()
        };
        (PlanSecrets::find(&tree, &sources), sources)
    }

    #[test]
    fn literal_secrets_are_stored_as_variables_and_masked_for_display() {
        let text = "[endpoints.a]\nheaders = { Authorization = \"Bearer sk-canary-1\", \
                    X-Trace = \"on\", x-api-key = \"${KEY}\" }\n";
        let (s, mut sources) = secrets_of("p.toml", text);
        assert_eq!(s.literal.len(), 1);
        assert_eq!(s.literal[0].variable, "PERFPLAN_SECRET_A_AUTHORIZATION");
        assert_eq!(
            s.stored[0],
            "[endpoints.a]\nheaders = { Authorization = \"${PERFPLAN_SECRET_A_AUTHORIZATION}\", \
             X-Trace = \"on\", x-api-key = \"${KEY}\" }\n"
        );
        s.mask(&mut sources);
        let shown = &sources.files[0].text;
        assert!(
            !shown.contains("canary") && shown.len() == text.len(),
            "{shown}"
        );
        let w = s.warnings()[0].render(&sources);
        assert!(!w.contains("canary"), "{w}");
        assert!(
            w.contains("Authorization = \"${PERFPLAN_SECRET_A_AUTHORIZATION}\""),
            "{w}"
        );
    }

    #[test]
    fn a_bare_yaml_secret_is_stored_quoted() {
        let text = "endpoints:\n  a:\n    headers:\n      authorization: Bearer sk-canary-2\n";
        let (s, _) = secrets_of("p.yaml", text);
        assert_eq!(
            s.stored[0],
            "endpoints:\n  a:\n    headers:\n      authorization: \"${PERFPLAN_SECRET_A_AUTHORIZATION}\"\n"
        );
    }
}
