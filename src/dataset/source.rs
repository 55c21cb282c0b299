//! What file datasets read: candidate prompts with where they came from, and the shared
//! helpers for locating and reading dataset files.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{DatasetContext, DatasetError};

/// One prompt as read from a source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    Text(String),
    Messages(Vec<Value>),
    Body(Map<String, Value>),
}

/// A prompt of a file, with its recorded answer (ShareGPT) and its line (1-based).
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub source: Source,
    pub answer: Option<String>,
    pub line: usize,
}

/// Everything a file dataset read.
#[derive(Debug)]
pub(crate) struct SourceSet {
    /// The file (or the plan folder for an inline prompt), for messages.
    pub path: PathBuf,
    pub candidates: Vec<Candidate>,
    /// Warn when the run needs more requests than there are prompts (not for one fixed prompt).
    pub warn_on_cycle: bool,
}

/// A dataset path resolved against the plan's folder.
pub(crate) fn resolve(ctx: &DatasetContext, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        ctx.base_dir.join(p)
    }
}

/// A whole UTF-8 file; a missing, unreadable or blank file is an error naming it.
pub(crate) fn read_text(path: &Path) -> Result<String, DatasetError> {
    let text = crate::text::read(path).map_err(|source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if text.trim().is_empty() {
        return Err(DatasetError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(text)
}

/// Why one line (or record) of a file is not usable: malformed JSON, or what is wrong
/// with it. The readers stop at the first (`at`); `check` collects them all.
#[derive(Debug)]
pub(crate) enum LineError {
    Json(serde_json::Error),
    Message(String),
}

impl From<String> for LineError {
    fn from(message: String) -> LineError {
        LineError::Message(message)
    }
}

impl From<&str> for LineError {
    fn from(message: &str) -> LineError {
        LineError::Message(message.to_string())
    }
}

impl LineError {
    /// The error at `line` of `path`.
    pub fn at(self, path: &Path, line: usize) -> DatasetError {
        let path = path.to_path_buf();
        match self {
            LineError::Json(source) => DatasetError::Json { path, line, source },
            LineError::Message(message) => DatasetError::Line {
                path,
                line,
                message,
            },
        }
    }

    /// What is wrong, in words.
    pub(crate) fn describe(&self) -> String {
        match self {
            LineError::Json(e) => format!("malformed JSON ({e})"),
            LineError::Message(m) => m.clone(),
        }
    }
}

/// One line of a JSON Lines file.
pub(crate) fn json_line(raw: &str) -> Result<Value, LineError> {
    serde_json::from_str(raw).map_err(LineError::Json)
}

/// The lines of a file with their 1-based numbers, `\r` removed, blank lines skipped.
pub(crate) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix('\r').unwrap_or(line)))
        .filter(|(_, line)| !line.trim().is_empty())
}
