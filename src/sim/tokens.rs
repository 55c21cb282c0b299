//! Token counting for the simulator, behind one small type (`TokenCounter`) so that exact
//! counting with the `tokenize` module can replace it in one place.
//!
//! Without a tokenizer, text is split by a deterministic approximation:
//! - a run of ASCII letters, digits or `_` is one token per 8 characters (split every 8);
//! - every other non-whitespace character (punctuation, any non-ASCII character) is one token;
//! - whitespace is free (it belongs to the next token).
//!
//! Each token gets an id (a hash of its text) so that the prefix cache can hash sequences.
//! Chat messages are rendered as `[role marker] content [end marker]` for each message plus a
//! reply marker, i.e. content tokens + 2 per message + 1. Token-id prompts are used as given.
//! Knows nothing about HTTP.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::tokenize::Tokenizer;

/// Characters per token for runs of ASCII word characters.
const WORD_PIECE: usize = 8;

/// Why a tokenizer could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("cannot load tokenizer `{path}`: {reason}")]
pub struct TokenizerError {
    pub path: PathBuf,
    pub reason: String,
}

/// Turns text into token ids: the approximation above, or a real tokenizer (a folder with
/// tokenizer.json and, for chats, the chat template of tokenizer_config.json, counted the
/// way servers count: rendered, then encoded without special tokens).
#[derive(Clone)]
pub(crate) struct TokenCounter {
    exact: Option<Arc<Tokenizer>>,
}

impl TokenCounter {
    /// The approximation, or the tokenizer at `path` (a tokenizer.json or a folder holding one).
    pub(crate) fn load(path: Option<&str>) -> Result<Self, TokenizerError> {
        let Some(path) = path else {
            return Ok(TokenCounter { exact: None });
        };
        let tok = Tokenizer::load(Path::new(path)).map_err(|e| TokenizerError {
            path: PathBuf::from(path),
            reason: e.to_string(),
        })?;
        Ok(TokenCounter { exact: Some(tok) })
    }

    /// Appends the ids of `text` to `out` (no special tokens: text inside a chat or a list).
    pub(crate) fn encode(&self, text: &str, out: &mut Vec<u32>) {
        self.encode_with(text, false, out)
    }

    /// Appends the ids of a raw completions prompt (with the tokenizer's special tokens, such
    /// as a BOS, as servers add them).
    pub(crate) fn encode_prompt(&self, text: &str, out: &mut Vec<u32>) {
        self.encode_with(text, true, out)
    }

    fn encode_with(&self, text: &str, special: bool, out: &mut Vec<u32>) {
        match self.exact.as_ref().map(|t| t.encode(text, special)) {
            Some(Ok(ids)) => out.extend_from_slice(&ids),
            _ => approximate(text, out),
        }
    }

    /// A whole chat through the real chat template, when there is one, with the
    /// request's `tools` as the template's `tools` variable; a message without content
    /// (an assistant's tool calls) goes in with `""`, as vLLM hands it over.
    pub(crate) fn chat(
        &self,
        messages: &[serde_json::Value],
        tools: Option<&serde_json::Value>,
    ) -> Option<Vec<u32>> {
        let tok = self.exact.as_ref().filter(|t| t.has_chat_template())?;
        let mut kwargs = serde_json::Map::new();
        if let Some(tools) = tools {
            kwargs.insert("tools".into(), tools.clone());
        }
        if messages
            .iter()
            .any(|m| m.get("content").is_some_and(|c| c.is_null()))
        {
            let mut filled = messages.to_vec();
            for m in filled
                .iter_mut()
                .filter(|m| m.get("content").is_some_and(|c| c.is_null()))
            {
                m["content"] = serde_json::json!("");
            }
            return tok.encode_chat_with(&filled, &kwargs).ok();
        }
        tok.encode_chat_with(messages, &kwargs).ok()
    }
}

/// The id of a chat marker (role start, message end, reply prompt).
pub(crate) fn marker(name: &str) -> u32 {
    hash_piece(name.as_bytes()) | 0x8000_0000
}

/// The approximation documented in the module header.
pub(crate) fn approximate(text: &str, out: &mut Vec<u32>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() || b == b'_' {
            let start = i;
            while i < bytes.len()
                && i - start < WORD_PIECE
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_')
            {
                i += 1;
            }
            out.push(hash_piece(&bytes[start..i]));
        } else if b.is_ascii_whitespace() {
            i += 1;
        } else {
            let len = utf8_len(b);
            let end = (i + len).min(bytes.len());
            let piece = &bytes[i..end];
            i = end;
            if !std::str::from_utf8(piece).is_ok_and(|s| s.chars().all(char::is_whitespace)) {
                out.push(hash_piece(piece));
            }
        }
    }
}

/// Number of tokens of `text` under the approximation.
#[cfg(test)]
pub(crate) fn approximate_count(text: &str) -> usize {
    let mut v = Vec::new();
    approximate(text, &mut v);
    v.len()
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// FNV-1a over the bytes, folded to 31 bits (markers use the top bit).
fn hash_piece(bytes: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    ((h ^ (h >> 32)) as u32) & 0x7fff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_punctuation_and_long_runs() {
        assert_eq!(approximate_count("Hello, world!"), 4);
        assert_eq!(approximate_count("  the   model "), 2);
        assert_eq!(approximate_count("abcdefghijklmnopq"), 3);
        assert_eq!(approximate_count("naïve"), 3);
        assert_eq!(approximate_count("日本語"), 3);
        assert_eq!(approximate_count(""), 0);
    }

    #[test]
    fn loads_a_tokenizer_json_or_folder() {
        let dir = tempfile::tempdir().unwrap();
        let json = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
            "decoder":null,"model":{"type":"WordLevel","vocab":{"hello":0,"world":1,"[UNK]":2},
            "unk_token":"[UNK]"}}"#;
        std::fs::write(dir.path().join("tokenizer.json"), json).unwrap();
        let tok = TokenCounter::load(dir.path().to_str()).unwrap();
        let mut ids = Vec::new();
        tok.encode("hello world, again", &mut ids);
        assert_eq!(ids, vec![0, 1, 2, 2]);
        let missing = dir.path().join("nope.json");
        let err = TokenCounter::load(missing.to_str()).err().unwrap();
        assert!(err.to_string().contains("nope.json"));
    }

    #[test]
    fn same_text_same_ids() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        approximate("a b c", &mut a);
        approximate("a  b\nc", &mut b);
        assert_eq!(a, b);
        assert_ne!(marker("user"), a[0]);
    }
}
