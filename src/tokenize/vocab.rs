//! The vocabulary random prompts are drawn from: the first 8,192 whole-word tokens (a
//! word-start marker followed by ASCII letters) that encode back to exactly themselves, so that a text made of
//! them has, token for token, the length it was built with. Special, added and byte-fallback
//! tokens are never in it.

use std::collections::HashSet;

/// Fewer usable words than this and the pool falls back to every plain token.
const MIN_WORDS: usize = 256;
/// The pool keeps the first words by id (the most frequent merges: common words). Fewer
/// than the tokenizers crate's BPE cache (10,000 entries) so that every pool word stays
/// cached and random text encodes fast.
const MAX_WORDS: usize = 8192;

/// Tokens usable in random text, with the text each contributes (a leading space included).
#[derive(Debug, Clone)]
pub struct WordPool {
    words: Vec<(u32, String)>,
    word_aligned: bool,
}

impl WordPool {
    pub(crate) fn build(tok: &tokenizers::Tokenizer) -> WordPool {
        let added: HashSet<u32> = tok.get_added_tokens_decoder().keys().copied().collect();
        let mut vocab: Vec<(String, u32)> = tok
            .get_vocab(false)
            .into_iter()
            .filter(|(_, id)| !added.contains(id))
            .collect();
        vocab.sort_by_key(|(_, id)| *id);
        let words: Vec<(u32, String)> = vocab
            .iter()
            .filter_map(|(piece, id)| {
                let rest = piece
                    .strip_prefix('Ġ')
                    .or_else(|| piece.strip_prefix('▁'))?;
                if rest.len() < 2 || !rest.bytes().all(|b| b.is_ascii_alphabetic()) {
                    return None;
                }
                let text = format!(" {rest}");
                let ids = tok.encode_fast(text.as_str(), false).ok()?;
                (ids.get_ids() == [*id]).then_some((*id, text))
            })
            .take(MAX_WORDS)
            .collect();
        if words.len() >= MIN_WORDS {
            return WordPool {
                words,
                word_aligned: true,
            };
        }
        let words = vocab
            .iter()
            .filter(|(piece, _)| !is_byte_fallback(piece))
            .filter_map(|(_, id)| {
                let text = tok.decode(&[*id], false).ok()?;
                (!text.is_empty() && !text.contains('\u{FFFD}')).then_some((*id, text))
            })
            .collect();
        WordPool {
            words,
            word_aligned: false,
        }
    }

    /// Number of tokens in the pool.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The token id and text of entry `index` (`index < len()`).
    pub fn word(&self, index: usize) -> Option<(u32, &str)> {
        self.words.get(index).map(|(id, s)| (*id, s.as_str()))
    }

    /// Whether every entry is a whole word starting with a space (text built from them
    /// re-encodes to the same tokens with most tokenizers).
    pub fn word_aligned(&self) -> bool {
        self.word_aligned
    }
}

/// `<0x0A>`-style tokens of SentencePiece byte fallback.
fn is_byte_fallback(piece: &str) -> bool {
    piece.len() == 6 && piece.starts_with("<0x") && piece.ends_with('>')
}
