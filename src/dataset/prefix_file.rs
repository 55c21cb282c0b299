//! `prefix_file`: real text cut at a token boundary to any length from its start, so every
//! request's prefix is the same text up to its budget (shareable by a prefix cache). A file
//! shorter than the longest budget is repeated (tiled) with a warning.

use std::path::{Path, PathBuf};

use super::source::read_text;
use super::DatasetError;
use crate::tokenize::Tokenizer;

/// Separator between copies of a tiled file and between a prefix and its prompt.
pub(crate) const JOINER: &str = "\n\n";

pub(crate) struct PrefixFile {
    text: String,
    /// The file's tokens.
    ids: Vec<u32>,
    /// Byte end of each token in `text` (non-decreasing, on char boundaries).
    ends: Vec<usize>,
}

impl PrefixFile {
    /// Reads `path` and tokenizes it; tiles it to at least `needed` tokens.
    /// Returns a warning when it had to tile.
    pub fn load(
        path: &Path,
        tok: &Tokenizer,
        needed: usize,
    ) -> Result<(PrefixFile, Option<String>), DatasetError> {
        let original = read_text(path)?;
        let mut file = PrefixFile::tokenize(original.clone(), tok)?;
        let have = file.ends.len();
        if have >= needed {
            return Ok((file, None));
        }
        let copies = needed / have.max(1) + 2;
        let tiled = vec![original.as_str(); copies].join(JOINER);
        file = PrefixFile::tokenize(tiled, tok)?;
        let warning = format!(
            "prefix_file {} has {have} tokens, fewer than the {needed} a request may need: its \
             text is repeated {copies} times; use a longer file to avoid repeated text",
            display(path)
        );
        Ok((file, Some(warning)))
    }

    fn tokenize(text: String, tok: &Tokenizer) -> Result<PrefixFile, DatasetError> {
        let mut ends = Vec::new();
        let mut ids = Vec::new();
        let mut last = 0;
        for (id, (_, end)) in tok.encode_with_offsets(&text, false)? {
            let mut end = end.min(text.len()).max(last);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            ids.push(id);
            ends.push(end);
            last = end;
        }
        Ok(PrefixFile { text, ids, ends })
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The ids of the first `k` tokens as they were in the whole file.
    pub fn ids(&self, k: usize) -> &[u32] {
        &self.ids[..k.min(self.ids.len())]
    }

    /// The text of tokens `from..to`.
    pub fn span(&self, from: usize, to: usize) -> &str {
        let to = to.min(self.ends.len());
        if from >= to {
            return "";
        }
        let start = if from == 0 { 0 } else { self.ends[from - 1] };
        &self.text[start..self.ends[to - 1].max(start)]
    }

    /// The text of the first `k` tokens.
    pub fn cut(&self, k: usize) -> &str {
        match k.min(self.ends.len()) {
            0 => "",
            k => &self.text[..self.ends[k - 1]],
        }
    }
}

fn display(path: &Path) -> String {
    PathBuf::from(path).display().to_string()
}

/// The text of the first `k` tokens of `text` given its token ends (for capping prompts).
pub(crate) fn cut_text<'a>(text: &'a str, ends: &[usize], k: usize) -> &'a str {
    match k.min(ends.len()) {
        0 => "",
        k => {
            let mut end = ends[k - 1].min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            &text[..end]
        }
    }
}
