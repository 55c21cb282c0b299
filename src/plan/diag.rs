//! Located diagnostics: the files a plan was read from, spans into them, and the
//! rendering `file:line:col` + the offending line + a caret label + help.

use std::fmt::Write as _;

/// Index of a source in `Sources`.
pub(crate) type FileId = usize;

/// A byte range in one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub file: FileId,
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span { file, start, end }
    }
}

/// One text a plan was read from: a file, or the command line for `--set`.
#[derive(Debug, Clone)]
pub struct Source {
    /// As shown in diagnostics (the path as given, or `--set`).
    pub name: String,
    pub text: String,
}

/// Every text that went into a plan, so diagnostics can show their lines (literal
/// secrets masked, see `plan::secrets`).
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub files: Vec<Source>,
    /// Hides the plan's secret values in every rendered diagnostic.
    pub redactor: crate::secrets::Redactor,
}

impl Sources {
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.push(Source {
            name: name.into(),
            text: text.into(),
        });
        self.files.len() - 1
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn line_col(&self, file: FileId, offset: usize) -> (usize, usize) {
        let Some(src) = self.files.get(file) else {
            return (1, 1);
        };
        let offset = clamp_to_char(&src.text, offset);
        let before = &src.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = src.text[line_start..offset].chars().count() + 1;
        (line, col)
    }

    fn line_text(&self, file: FileId, line: usize) -> &str {
        self.files
            .get(file)
            .and_then(|s| s.text.lines().nth(line.saturating_sub(1)))
            .unwrap_or("")
    }
}

fn clamp_to_char(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One problem in a plan, with where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Option<Span>,
    /// Short text under the caret.
    pub label: Option<String>,
    /// "did you mean …", "use …".
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, span: Option<Span>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span,
            label: None,
            help: None,
        }
    }

    pub fn warning(message: impl Into<String>, span: Option<Span>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message, span)
        }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub(crate) fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:col` of the diagnostic, if it has a place.
    pub fn location(&self, sources: &Sources) -> Option<String> {
        let span = self.span?;
        let name = &sources.files.get(span.file)?.name;
        let (line, col) = sources.line_col(span.file, span.start);
        Some(format!("{name}:{line}:{col}"))
    }

    /// The multi-line human rendering.
    pub fn render(&self, sources: &Sources) -> String {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = format!("{kind}: {}\n", self.message);
        if let Some(span) = self.span {
            render_snippet(&mut out, sources, span, self.label.as_deref());
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "   = help: {help}");
        }
        sources.redactor.redact(&out).into_owned()
    }
}

fn render_snippet(out: &mut String, sources: &Sources, span: Span, label: Option<&str>) {
    let Some(src) = sources.files.get(span.file) else {
        return;
    };
    let (line, col) = sources.line_col(span.file, span.start);
    let text = sources.line_text(span.file, line);
    let gutter = line.to_string().len();
    let pad = " ".repeat(gutter);
    let _ = writeln!(out, "{pad}--> {}:{line}:{col}", src.name);
    let _ = writeln!(out, "{pad} |");
    let _ = writeln!(out, "{line} | {text}");
    let line_chars = text.chars().count();
    let start = col.saturating_sub(1).min(line_chars);
    let (end_line, end_col) = sources.line_col(span.file, span.end.max(span.start));
    let width = if end_line == line {
        end_col.saturating_sub(col).max(1)
    } else {
        line_chars.saturating_sub(start).max(1)
    };
    let caret = format!("{}{}", " ".repeat(start), "^".repeat(width));
    match label {
        Some(label) => {
            let _ = writeln!(out, "{pad} | {caret} {label}");
        }
        None => {
            let _ = writeln!(out, "{pad} | {caret}");
        }
    }
}

/// All diagnostics of one load, with the sources they point into.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| !d.is_error())
    }

    /// Every diagnostic rendered, errors first, then a count line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for d in self.errors().chain(self.warnings()) {
            out.push_str(&d.render(&self.sources));
            out.push('\n');
        }
        let errors = self.errors().count();
        if errors > 0 {
            let _ = writeln!(
                out,
                "{errors} error{} in the plan",
                if errors == 1 { "" } else { "s" }
            );
        }
        out
    }
}

/// The nearest valid name to a misspelt one, if any is close enough: the one rule of
/// `crate::suggest`, under the name plan and planner call it by.
pub use crate::suggest::nearest as suggest;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_and_caret() {
        let mut sources = Sources::default();
        let f = sources.add("plan.toml", "[datasets.a]\ninput_token = 1024\n");
        let d = Diagnostic::error("unknown key `input_token`", Some(Span::new(f, 13, 24)))
            .with_label("not a dataset key")
            .with_help("did you mean `input_tokens`?");
        assert_eq!(d.location(&sources).as_deref(), Some("plan.toml:2:1"));
        let text = d.render(&sources);
        assert!(text.contains("--> plan.toml:2:1"), "{text}");
        assert!(text.contains("2 | input_token = 1024"), "{text}");
        assert!(text.contains("  | ^^^^^^^^^^^ not a dataset key"), "{text}");
    }
}
