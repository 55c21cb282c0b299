//! `kind = "lines"`: one prompt per non-blank line of a text file.

use super::source::{numbered_lines, read_text, required_path, Candidate, Source, SourceSet};
use super::{DatasetContext, DatasetError};
use crate::plan::spec::DatasetSpec;

pub(crate) fn read(spec: &DatasetSpec, ctx: &DatasetContext) -> Result<SourceSet, DatasetError> {
    let path = required_path(spec, ctx, "lines")?;
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
