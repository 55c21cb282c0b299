//! `RunWarning`: one thing said about a run, typed: its code, its severity and a sentence
//! that says what was seen and what to do. Stored as `{"code", "severity", "text"}`;
//! a warning stored before codes existed (a bare string) reads back with the code its
//! old prefix named (`cache_leak: …`), else `note`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::code::{Code, Severity};

/// One warning of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunWarning {
    pub code: Code,
    pub severity: Severity,
    /// What was seen and what to do (without the code).
    pub text: String,
}

impl RunWarning {
    /// A warning with its code's severity.
    pub fn new(code: Code, text: impl Into<String>) -> RunWarning {
        RunWarning {
            code,
            severity: code.severity(),
            text: text.into(),
        }
    }

    /// The same warning with another severity.
    pub(crate) fn with_severity(mut self, severity: Severity) -> RunWarning {
        self.severity = severity;
        self
    }

    /// A bare note (its code `note`).
    pub fn note(text: impl Into<String>) -> RunWarning {
        RunWarning::new(Code::Note, text)
    }

    /// Reads a warning stored as a bare string: the code its `code: ` prefix names (the
    /// prefix dropped from the text), else a note. Severity is the code's.
    pub(crate) fn from_legacy(text: &str) -> RunWarning {
        if let Some((head, rest)) = text.split_once(": ") {
            if let Some(code) = Code::parse(head).filter(|c| *c != Code::Note) {
                return RunWarning::new(code, rest);
            }
        }
        RunWarning::note(text)
    }

    /// Whether this warning weighs on the verdict.
    pub(crate) fn is_reason(&self) -> bool {
        self.severity > Severity::Info
    }
}

impl fmt::Display for RunWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Code::Note => f.write_str(&self.text),
            code => write!(f, "{code}: {}", self.text),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Typed {
        code: Code,
        #[serde(default)]
        severity: Option<Severity>,
        #[serde(default)]
        text: String,
    },
    Legacy(String),
}

impl<'de> Deserialize<'de> for RunWarning {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RunWarning, D::Error> {
        Ok(match Stored::deserialize(d)? {
            Stored::Typed {
                code,
                severity,
                text,
            } => RunWarning {
                code,
                severity: severity.unwrap_or(code.severity()),
                text,
            },
            Stored::Legacy(text) => RunWarning::from_legacy(&text),
        })
    }
}

/// Converts plain notes (from stages that know no codes) into warnings of `code`; a note
/// that already starts with `code: ` loses that prefix.
pub(crate) fn all_as(code: Code, texts: impl IntoIterator<Item = String>) -> Vec<RunWarning> {
    let prefix = format!("{code}: ");
    texts
        .into_iter()
        .map(|t| match t.strip_prefix(&prefix) {
            Some(rest) => RunWarning::new(code, rest),
            None => RunWarning::new(code, t),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_and_legacy_warnings_read_back() {
        let typed = RunWarning::new(Code::CacheLeak, "found 992 of 1000 cached");
        let json = serde_json::to_string(&typed).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"code":"cache_leak","severity":"invalid","text":"found 992 of 1000 cached"}"#
        );
        let back: RunWarning = serde_json::from_str(&json).unwrap_or_else(|_| RunWarning::note(""));
        assert_eq!(back, typed);
        let old: Vec<RunWarning> =
            serde_json::from_str(r#"["client_bound: cpu 0.98", "a trace replay has no warmup"]"#)
                .unwrap_or_default();
        assert_eq!(old[0].code, Code::ClientBound);
        assert_eq!(old[0].text, "cpu 0.98");
        assert_eq!(old[0].to_string(), "client_bound: cpu 0.98");
        assert_eq!(old[1].code, Code::Note);
        assert_eq!(old[1].to_string(), "a trace replay has no warmup");
    }

    #[test]
    fn a_newer_code_reads_as_a_note_with_its_severity() {
        let w: RunWarning =
            serde_json::from_str(r#"{"code":"from_the_future","severity":"suspect","text":"x"}"#)
                .unwrap_or_else(|_| RunWarning::note(""));
        assert_eq!((w.code, w.severity), (Code::Note, Severity::Suspect));
    }
}
