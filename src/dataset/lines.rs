//! `kind = "lines"`: one prompt per non-blank line of a text file.

use super::source::{numbered_lines, read_text, resolve, Candidate, Source, SourceSet};
use super::{DatasetContext, DatasetError};

pub(crate) fn read(path: &str, ctx: &DatasetContext) -> Result<SourceSet, DatasetError> {
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let candidates = numbered_lines(&text)
        .map(|(line, prompt)| Candidate {
            source: Source::Text(prompt.to_string()),
            answer: None,
            line,
        })
        .collect();
    Ok(SourceSet {
        path,
        candidates,
        warn_on_cycle: true,
    })
}
