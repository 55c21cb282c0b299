//! Counting random prompts without re-encoding the run's shared prefix for every request.
//! A prompt is `head + prefix + suffix + tail` (head/tail: what the chat template puts
//! around the content). The left part `head + prefix` is encoded once per run; each request
//! encodes `suffix + tail`, and the two counts add up when the prefix/suffix junction splits
//! cleanly, which is checked per request by encoding a few words on each side of it. A
//! request whose junction or rendering does not check out is counted whole instead.

use super::measure::{user_message, Measure, Measured, Mode};
use super::DatasetError;
use crate::tokenize::Tokenizer;

/// Words on each side of the junction that are encoded together to check it.
const JUNCTION_WORDS: usize = 4;

pub(crate) struct SplitCounter<'a> {
    measure: &'a Measure,
    tok: &'a Tokenizer,
    mode: Mode,
    prefix: &'a str,
    head: String,
    tail: String,
    /// Tokens of `head + prefix` (no special tokens).
    left_count: usize,
    /// Ids of the prefix (token-id mode).
    left_ids: Vec<u32>,
    /// Ids the post-processor adds before and after a text (completions modes).
    before: Vec<u32>,
    after: Vec<u32>,
    /// The prefix's last words and their token count.
    prefix_end: &'a str,
    prefix_end_count: usize,
}

impl<'a> SplitCounter<'a> {
    /// `None` when the split does not apply: no prefix, no tokenizer, or a chat template
    /// that rewrites the content.
    pub fn new(measure: &'a Measure, prefix: &'a str) -> Result<Option<Self>, DatasetError> {
        let (Some(tok), false) = (measure.tokenizer(), prefix.is_empty()) else {
            return Ok(None);
        };
        let Some((head, tail)) = measure.frame()? else {
            return Ok(None);
        };
        let mode = measure.mode();
        let bare = tok.encode(prefix, false)?;
        let (before, after) = if matches!(mode, Mode::Text | Mode::TokenIds) {
            let Some(parts) = added_specials(&bare, &tok.encode(prefix, true)?) else {
                return Ok(None);
            };
            parts
        } else {
            (Vec::new(), Vec::new())
        };
        let left_count = if head.is_empty() {
            bare.len()
        } else {
            tok.count(&format!("{head}{prefix}"), false)?
        };
        let prefix_end = last_words(prefix, JUNCTION_WORDS);
        Ok(Some(SplitCounter {
            measure,
            tok,
            mode,
            prefix,
            head,
            tail,
            left_count,
            left_ids: if mode == Mode::TokenIds {
                bare
            } else {
                Vec::new()
            },
            before,
            after,
            prefix_end,
            prefix_end_count: tok.count(prefix_end, false)?,
        }))
    }

    /// The measure of `prefix + suffix` (`suffix` starts with a space), or `None` when the
    /// junction is not clean and the prompt must be counted whole.
    pub fn measure(&self, suffix: &str) -> Result<Option<Measured>, DatasetError> {
        if suffix.is_empty() || !suffix.starts_with(' ') {
            return Ok(None);
        }
        let start = first_words(suffix, JUNCTION_WORDS);
        let window = format!("{}{start}", self.prefix_end);
        let joined = self.tok.count(&window, false)?;
        if joined != self.prefix_end_count + self.tok.count(start, false)? {
            return Ok(None);
        }
        if let Mode::Chat { template: true } = self.mode {
            let content = format!("{}{suffix}", self.prefix);
            let rendered = self.measure.render(self.tok, &[user_message(&content)])?;
            let framed = rendered.len() == self.head.len() + content.len() + self.tail.len()
                && rendered.starts_with(&self.head)
                && rendered.ends_with(&self.tail);
            if !framed {
                return Ok(None);
            }
        }
        if self.mode == Mode::TokenIds {
            let right = self.tok.encode(suffix, false)?;
            let mut ids = Vec::with_capacity(
                self.before.len() + self.left_ids.len() + right.len() + self.after.len(),
            );
            ids.extend_from_slice(&self.before);
            ids.extend_from_slice(&self.left_ids);
            ids.extend_from_slice(&right);
            ids.extend_from_slice(&self.after);
            return Ok(Some(Measured::ids(ids)));
        }
        let right = self.tok.count(&format!("{suffix}{}", self.tail), false)?;
        let specials = self.before.len() + self.after.len();
        Ok(Some(Measured::count(self.left_count + right + specials)))
    }
}

/// Splits `with` (a text encoded with special tokens) around `bare` (the same text without
/// them): the ids added before and after.
fn added_specials(bare: &[u32], with: &[u32]) -> Option<(Vec<u32>, Vec<u32>)> {
    let extra = with.len().checked_sub(bare.len())?;
    (0..=extra)
        .find(|&k| with[k..k + bare.len()] == *bare)
        .map(|k| (with[..k].to_vec(), with[k + bare.len()..].to_vec()))
}

/// The last `n` space-separated words of `text`, with their leading space.
fn last_words(text: &str, n: usize) -> &str {
    let mut seen = 0;
    for (i, c) in text.char_indices().rev() {
        if c == ' ' {
            seen += 1;
            if seen == n {
                return &text[i..];
            }
        }
    }
    text
}

/// The first `n` words of `text` (which starts with a space), each with its leading space.
fn first_words(text: &str, n: usize) -> &str {
    let mut seen = 0;
    for (i, c) in text.char_indices() {
        if c == ' ' {
            seen += 1;
            if seen == n + 1 {
                return &text[..i];
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_windows() {
        assert_eq!(last_words("a b c d e f", 4), " c d e f");
        assert_eq!(last_words("a b", 4), "a b");
        assert_eq!(first_words(" a b c d e f", 4), " a b c d");
        assert_eq!(first_words(" a b", 4), " a b");
    }

    #[test]
    fn specials_around_a_text() {
        assert_eq!(
            added_specials(&[5, 6], &[1, 5, 6, 2]),
            Some((vec![1], vec![2]))
        );
        assert_eq!(added_specials(&[5, 6], &[5, 6]), Some((vec![], vec![])));
        assert_eq!(added_specials(&[5, 6], &[1, 5, 7]), None);
    }
}
