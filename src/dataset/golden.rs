//! The golden set of a plan's `[checks]`: the built-in one (`api::golden::builtin`) or a
//! user's JSONL file, one golden request per line (`api::golden::GoldenCase::from_json`),
//! read with every bad line said by its number, before any request is sent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::api::golden::{builtin, GoldenCase};

/// One bad line of a golden file (or the file itself, `line` 0).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct GoldenLineError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

/// The golden set: `path`'s cases (relative to `base_dir`), else the built-in ones
/// (with the tool call when `tools`: the run's API offers tools). Every bad line is an
/// error, all of them at once.
pub fn golden_set(
    path: Option<&str>,
    base_dir: &Path,
    tools: bool,
) -> Result<Vec<Arc<GoldenCase>>, Vec<GoldenLineError>> {
    let Some(path) = path else {
        return Ok(builtin(tools).into_iter().map(Arc::new).collect());
    };
    let full = base_dir.join(path);
    let fail = |line, message: String| GoldenLineError {
        path: full.clone(),
        line,
        message,
    };
    let text = std::fs::read_to_string(&full)
        .map_err(|e| vec![fail(0, format!("cannot read the golden file: {e}"))])?;
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str(line)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(|v| GoldenCase::from_json(&v));
        match parsed {
            Ok(c) => cases.push(Arc::new(c)),
            Err(message) => errors.push(fail(i + 1, message)),
        }
    }
    if cases.is_empty() && errors.is_empty() {
        errors.push(fail(0, "the golden file has no golden requests".into()));
    }
    match errors.is_empty() {
        true => Ok(cases),
        false => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_are_all_said_with_their_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let text = "{\"prompt\": \"2+2?\", \"expected\": {\"regex\": \"4\"}}\n\n{oops\n\
                    {\"prompt\": \"x\", \"expected\": {\"regx\": \"y\"}}\n";
        std::fs::write(dir.path().join("g.jsonl"), text).unwrap();
        let errs = golden_set(Some("g.jsonl"), dir.path(), false).unwrap_err();
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].line, 3);
        assert!(errs[0]
            .to_string()
            .ends_with("g.jsonl:3: not JSON: key must be a string at line 1 column 2"));
        assert_eq!(errs[1].line, 4);
        assert!(errs[1].message.contains("did you mean `regex`?"));
        assert_eq!(golden_set(None, dir.path(), true).unwrap().len(), 5);
    }
}
