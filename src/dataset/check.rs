//! Every file a dataset reads, checked before the first request: each file opened and
//! read by the one text rule, every line parsed by the same function its reader uses
//! (so the check and the run agree), its usable prompts counted, every image's header
//! read; each problem located (file and line), all of them at once. A prompt holding a
//! NUL or another control character is a warning at its line (it is sent as written).
//! `run` stops on an error here before any request; `validate` reports the same.
//! Knows nothing about HTTP, runs or the store.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::source::{numbered_lines, read_text, LineError, Source};
use crate::plan::{DatasetPlan, FileSelect};

/// Most problems named per file (and kind): the rest are counted.
const MAX_PER_FILE: usize = 10;

/// One problem of a dataset file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    pub path: PathBuf,
    /// 1-based; `None` for the file as a whole.
    pub line: Option<usize>,
    pub message: String,
    /// A warning (the run goes on) rather than an error.
    pub warning: bool,
}

impl std::fmt::Display for FileProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// What the check of one dataset found: each file with its usable entries, and every
/// problem.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatasetCheck {
    pub files: Vec<(PathBuf, usize)>,
    pub problems: Vec<FileProblem>,
}

impl DatasetCheck {
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| !p.warning)
    }
}

/// Checks every file `plan` reads (paths relative to `base_dir`).
pub fn check(plan: &DatasetPlan, base_dir: &Path) -> DatasetCheck {
    let mut c = Checker {
        base_dir,
        out: DatasetCheck::default(),
    };
    c.dataset(plan);
    c.out
}

struct Checker<'a> {
    base_dir: &'a Path,
    out: DatasetCheck,
}

/// The problems of one file as they are found, capped per kind.
struct FileLog {
    path: PathBuf,
    usable: usize,
    errors: Vec<FileProblem>,
    warnings: Vec<FileProblem>,
    more_errors: usize,
    more_warnings: usize,
}

impl FileLog {
    fn new(path: PathBuf) -> FileLog {
        FileLog {
            path,
            usable: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
            more_errors: 0,
            more_warnings: 0,
        }
    }

    fn error(&mut self, line: Option<usize>, message: String) {
        if self.errors.len() < MAX_PER_FILE {
            let path = self.path.clone();
            self.errors.push(FileProblem {
                path,
                line,
                message,
                warning: false,
            });
        } else {
            self.more_errors += 1;
        }
    }

    /// A usable entry; a warning when its text holds a control character.
    fn usable(&mut self, line: Option<usize>, texts: &[&str]) {
        self.usable += 1;
        let Some((at, c)) = texts.iter().find_map(|t| {
            crate::text::control_char(t).map(|(i, c)| (t[..i].chars().count() + 1, c))
        }) else {
            return;
        };
        if self.warnings.len() < MAX_PER_FILE {
            self.warnings.push(FileProblem {
                path: self.path.clone(),
                line,
                message: format!(
                    "the prompt holds a control character ({} at character {at}); it is sent as written",
                    crate::text::describe_control(c)
                ),
                warning: true,
            });
        } else {
            self.more_warnings += 1;
        }
    }

    fn finish(mut self, what: &str, out: &mut DatasetCheck) {
        if self.more_errors > 0 {
            let n = self.more_errors;
            self.errors.push(FileProblem {
                path: self.path.clone(),
                line: None,
                message: format!("and {n} more line(s) that are not usable"),
                warning: false,
            });
        }
        if self.usable == 0 && self.errors.is_empty() {
            self.error(None, format!("holds no usable {what}"));
        }
        if self.more_warnings > 0 {
            let n = self.more_warnings;
            self.warnings.push(FileProblem {
                path: self.path.clone(),
                line: None,
                message: format!("and {n} more prompt(s) with control characters"),
                warning: true,
            });
        }
        out.files.push((self.path, self.usable));
        out.problems.extend(self.errors);
        out.problems.extend(self.warnings);
    }
}

/// Every string of a JSON value.
fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

impl Checker<'_> {
    fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }

    fn dataset(&mut self, plan: &DatasetPlan) {
        match plan {
            DatasetPlan::Prompt { text, select } => {
                if let Some(file) = text.strip_prefix('@') {
                    self.whole(file, "prompt");
                }
                self.select(select);
            }
            DatasetPlan::Lines { path, select } => {
                self.lines(path, |raw| Ok(vec![raw.to_string()]), "prompt");
                self.select(select);
            }
            DatasetPlan::Jsonl {
                path,
                field,
                select,
            } => {
                self.lines(
                    path,
                    |raw| source_texts(super::jsonl::parse_line(raw, field.as_deref())?),
                    "prompt",
                );
                self.select(select);
            }
            DatasetPlan::Sharegpt { path, select } => {
                self.sharegpt(path);
                self.select(select);
            }
            DatasetPlan::Conversations { path, .. } => self.lines(
                path,
                |raw| {
                    let s = super::multi_turn::parse_line(raw)?;
                    let mut t: Vec<String> = s.system.into_iter().collect();
                    t.extend(s.turns.into_iter().map(|t| t.user));
                    Ok(t)
                },
                "conversation",
            ),
            DatasetPlan::Trace(t) if t.format.synthesized() => self.lengths(t),
            DatasetPlan::Trace(t) => self.lines(
                &t.path,
                |raw| {
                    let body = Value::Object(super::trace::check_record(raw)?);
                    Ok(strings(&body).into_iter().map(String::from).collect())
                },
                "record",
            ),
            DatasetPlan::Embedding { path, .. } => self.embedding(path),
            DatasetPlan::Rerank { path, .. } => self.lines(
                path,
                |raw| {
                    let (q, mut docs) = super::batch_files::rerank_record(raw)?;
                    docs.insert(0, q);
                    Ok(docs)
                },
                "record",
            ),
            DatasetPlan::Images { path, .. } => self.images(path),
            DatasetPlan::ToolCalls(_, tools) => {
                if let Some(file) = &tools.tools {
                    self.tools(file);
                }
            }
            DatasetPlan::Mix(mix) => {
                for class in &mix.classes {
                    self.dataset(&class.dataset);
                }
            }
            _ => {}
        }
    }

    fn select(&mut self, select: &FileSelect) {
        if let Some(file) = &select.prefix_file {
            self.whole(file, "prefix text");
        }
    }

    /// A file read whole, or `None` with its problem logged.
    fn read(&mut self, log: &mut FileLog) -> Option<String> {
        match read_text(&log.path) {
            Ok(text) => Some(text),
            Err(e) => {
                log.error(None, crate::control::chain(&e));
                None
            }
        }
    }

    /// A file that is one text (`@prompt.txt`, a prefix file).
    fn whole(&mut self, file: &str, what: &str) {
        let mut log = FileLog::new(self.resolve(file));
        if let Some(text) = self.read(&mut log) {
            for (line, raw) in numbered_lines(&text) {
                log.usable(Some(line), &[raw]);
            }
            log.usable = 1;
        }
        log.finish(what, &mut self.out);
    }

    /// A file of one entry per line, each parsed by `parse` into the texts it sends.
    fn lines(
        &mut self,
        file: &str,
        parse: impl Fn(&str) -> Result<Vec<String>, LineError>,
        what: &str,
    ) {
        let mut log = FileLog::new(self.resolve(file));
        if let Some(text) = self.read(&mut log) {
            for (line, raw) in numbered_lines(&text) {
                match parse(raw) {
                    Ok(texts) => {
                        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                        log.usable(Some(line), &texts);
                    }
                    Err(e) => log.error(Some(line), e.describe()),
                }
            }
        }
        log.finish(what, &mut self.out);
    }

    /// A public trace: every record read by the reader's own function.
    fn lengths(&mut self, plan: &crate::plan::TracePlan) {
        let mut log = FileLog::new(self.resolve(&plan.path));
        if let Some(text) = self.read(&mut log) {
            for record in super::trace_formats::records(&text, plan.format) {
                match record {
                    Ok(r) if r.input == 0 => {}
                    Ok(r) => log.usable(Some(r.line), &[]),
                    Err((line, e)) => log.error(Some(line), e.describe()),
                }
            }
        }
        log.finish("record", &mut self.out);
    }

    /// A `tool_calls` tools file: one JSON array of tools, read by the run's own reader.
    fn tools(&mut self, file: &str) {
        let mut log = FileLog::new(self.resolve(file));
        if let Some(text) = self.read(&mut log) {
            match serde_json::from_str::<Value>(&text) {
                Err(e) => log.error(
                    Some(e.line()),
                    format!("malformed JSON at column {}: {e}", e.column()),
                ),
                Ok(v) => match crate::api::tools::ToolSet::from_json(&v) {
                    Ok(set) => log.usable = set.tools.len(),
                    Err(message) => log.error(None, message),
                },
            }
        }
        log.finish("tool", &mut self.out);
    }

    fn embedding(&mut self, file: &str) {
        let path = self.resolve(file);
        let json = crate::text::read(&path)
            .map(|t| super::batch_files::is_json(&path, &t))
            .unwrap_or(false);
        self.lines(
            file,
            |raw| Ok(vec![super::batch_files::embedding_input(raw, json)?]),
            "input",
        );
    }

    fn sharegpt(&mut self, file: &str) {
        let mut log = FileLog::new(self.resolve(file));
        if let Some(text) = self.read(&mut log) {
            for (line, exchange) in super::sharegpt::exchanges(&text) {
                match exchange {
                    Ok(Some((q, _))) => log.usable(Some(line), &[&q]),
                    Ok(None) => {}
                    Err(e) => log.error(Some(line), e.describe()),
                }
            }
        }
        log.finish("conversation with a human turn", &mut self.out);
    }

    fn images(&mut self, file: &str) {
        let mut log = FileLog::new(self.resolve(file));
        match super::images::entries_all(&log.path) {
            Err(e) => log.error(None, crate::control::chain(&e)),
            Ok((entries, bad)) => {
                for (line, e) in bad {
                    log.error(Some(line), e.describe());
                }
                for entry in entries {
                    match entry.source.checked() {
                        Ok(_) => log.usable(entry.line, &[entry.text.as_deref().unwrap_or("")]),
                        Err(e) => log.error(entry.line, crate::control::chain(&e)),
                    }
                }
            }
        }
        log.finish("image", &mut self.out);
    }
}

/// The texts a prompt of a JSONL line sends.
fn source_texts(source: Source) -> Result<Vec<String>, LineError> {
    Ok(match source {
        Source::Text(t) => vec![t],
        Source::Messages(items) => strings(&Value::Array(items))
            .into_iter()
            .map(String::from)
            .collect(),
        Source::Body(map) => strings(&Value::Object(map))
            .into_iter()
            .map(String::from)
            .collect(),
    })
}
