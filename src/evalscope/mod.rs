//! EvalScope perf command lines → perfplan plans (`perfplan import evalscope`). Each
//! recorded `evalscope perf` command line is read as EvalScope's parser reads it, every
//! parameter is mapped to a plan key or named with the reason it has none (`params`),
//! and the commands become one plan table that `plan::emit` writes and `load_plan`
//! validates like any file. `script` runs a shell script with `evalscope` replaced by a
//! recorder, so computed arguments arrive as the script would have passed them.
//! Knows the plan's shape, nothing of HTTP, the engine or the store.

pub mod args;
mod combine;
mod convert;
mod datasets;
mod loads;
pub mod params;
pub mod script;
pub mod url;

use serde_json::{Map, Value};

pub use combine::combine;
pub use convert::{convert_command, slug, Group};

/// Why command lines could not become a plan.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("unknown evalscope perf argument `{flag}`{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownFlag {
        flag: String,
        suggestion: Option<String>,
    },
    #[error("`{flag}` needs a value")]
    MissingValue { flag: String },
    #[error("`{value}` is not an argument (values follow the flag they belong to)")]
    StrayValue { value: String },
    #[error("`{flag} {value}`: expected {expected}")]
    Value {
        flag: String,
        value: String,
        expected: &'static str,
    },
    #[error("`{flag} {value}` cannot be imported: {why}")]
    Unsupported {
        flag: String,
        value: String,
        why: String,
    },
    #[error("{0}")]
    Mismatch(String),
    #[error("`{flag}` is not valid JSON")]
    Json {
        flag: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot read `{path}` (given to `{flag}`)")]
    Read {
        flag: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the script called no `evalscope perf` (it must call `evalscope` by name, found on PATH)"
    )]
    NoCommand,
    #[error("nothing to import: give one `evalscope perf` command's arguments after `--`, or --from-script SCRIPT")]
    NoArguments,
    #[error("cannot run the script {script}")]
    Script {
        script: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the script {script} {how} after recording {recorded} evalscope command(s); its output is above")]
    ScriptFailed {
        script: String,
        how: String,
        recorded: usize,
    },
}

/// A plan made from command lines: the plan's table and the notes for its reader (what
/// had no equivalent, where perfplan behaves differently).
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub plan: Map<String, Value>,
    pub notes: Vec<String>,
}

/// Converts the arguments of each `evalscope perf` command (after `perf`) into one plan.
pub fn import(commands: &[Vec<String>]) -> Result<Imported, ImportError> {
    let groups = commands
        .iter()
        .map(|argv| args::parse(argv).and_then(|p| convert_command(&p)))
        .collect::<Result<Vec<_>, _>>()?;
    combine(groups)
}

#[cfg(test)]
mod tests;
