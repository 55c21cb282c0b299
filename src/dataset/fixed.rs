//! `kind = "prompt"`: one fixed prompt for every request, inline (`text = "..."`) or read from
//! a file (`text = "@path"`, relative to the plan's folder).

use super::source::{read_text, resolve, Candidate, Source, SourceSet};
use super::{DatasetContext, DatasetError};

pub(crate) fn read(text: &str, ctx: &DatasetContext) -> Result<SourceSet, DatasetError> {
    let (path, prompt) = match text.strip_prefix('@') {
        Some(file) => {
            let path = resolve(ctx, file);
            let prompt = read_text(&path)?;
            (path, prompt)
        }
        None => {
            if text.trim().is_empty() {
                return Err(DatasetError::Invalid(
                    "dataset kind `prompt` has an empty `text`".into(),
                ));
            }
            (ctx.base_dir.clone(), text.to_string())
        }
    };
    Ok(SourceSet {
        path,
        candidates: vec![Candidate {
            source: Source::Text(prompt),
            answer: None,
            line: 1,
        }],
        warn_on_cycle: false,
    })
}
