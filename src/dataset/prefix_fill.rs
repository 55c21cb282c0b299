//! Filling a prompt to its target with the prefix file without re-encoding the whole prompt:
//! the prompt is rendered once with a marker in place of the prefix, which splits it into
//! the text before the prefix (`before`), the prefix, and the text after it (`after`: the
//! question and the template's closing). Then `k = target − |before| − |after|` prefix
//! tokens fill it exactly, provided the cut and the junctions split cleanly; that is checked
//! by encoding a few tokens around each junction. `None` sends the caller to the slow path
//! (build, count whole, adjust).

use super::measure::{user_message, Measure, Measured, Mode};
use super::prefix_file::PrefixFile;
use super::DatasetError;
use crate::tokenize::Tokenizer;

/// Stands for the prefix when the prompt is rendered once.
pub(crate) const MARKER: &str = "\u{E000}perfplan-prefix\u{E001}";
/// Tokens of the prefix encoded again on each side of a junction.
const WINDOW: usize = 8;
/// Bytes of the text after the prefix encoded with the window.
const AFTER_BYTES: usize = 64;

/// A prompt with [`MARKER`] where the prefix goes: chat messages or text.
pub(crate) enum Marked<'a> {
    Text(&'a str),
    Messages(&'a [serde_json::Value]),
}

/// The number of prefix tokens that makes the prompt `target` tokens, with its measure.
pub(crate) fn fast_fill(
    measure: &Measure,
    prefix: &PrefixFile,
    marked: Marked<'_>,
    target: usize,
) -> Result<Option<(usize, Measured)>, DatasetError> {
    let Some(tok) = measure.tokenizer() else {
        return Ok(None);
    };
    let rendered = match (measure.mode(), marked) {
        (Mode::Chat { template: true }, Marked::Messages(ms)) => measure.render(tok, ms)?,
        (Mode::Chat { template: true }, Marked::Text(t)) => {
            measure.render(tok, &[user_message(t)])?
        }
        (Mode::Text | Mode::TokenIds, Marked::Text(t)) => t.to_string(),
        _ => return Ok(None),
    };
    let mut parts = rendered.split(MARKER);
    let (Some(before), Some(after), None) = (parts.next(), parts.next(), parts.next()) else {
        return Ok(None);
    };
    let (lead, trail) = specials(tok, measure.mode())?;
    let fixed = tok.count(before, false)? + tok.count(after, false)? + lead.len() + trail.len();
    let Some(k) = target
        .checked_sub(fixed)
        .filter(|&k| k > 0 && k <= prefix.len())
    else {
        return Ok(None);
    };
    if !junctions_clean(tok, prefix, k, before, after)? {
        return Ok(None);
    }
    if measure.mode() == Mode::TokenIds {
        let after_ids = tok.encode(after, false)?;
        let mut ids = lead;
        ids.extend_from_slice(prefix.ids(k));
        ids.extend(after_ids);
        ids.extend(trail);
        return Ok(Some((k, Measured::ids(ids))));
    }
    Ok(Some((k, Measured::count(target))))
}

/// `before + prefix[..k] + after` counts `|before| + k + |after|`: the start of the prefix
/// joins `before` cleanly, the cut re-encodes to the file's own tokens, and the end of the
/// prefix joins `after` cleanly.
fn junctions_clean(
    tok: &Tokenizer,
    prefix: &PrefixFile,
    k: usize,
    before: &str,
    after: &str,
) -> Result<bool, DatasetError> {
    let head = prefix.span(0, k.min(WINDOW));
    if tok.count(&format!("{before}{head}"), false)? != tok.count(before, false)? + k.min(WINDOW) {
        return Ok(false);
    }
    let from = k.saturating_sub(WINDOW);
    let tail = prefix.span(from, k);
    if tok.encode(tail, false)? != prefix.ids(k)[from..] {
        return Ok(false);
    }
    let mut end = after.len().min(AFTER_BYTES);
    while !after.is_char_boundary(end) {
        end -= 1;
    }
    let after_head = &after[..end];
    let joined = tok.count(&format!("{tail}{after_head}"), false)?;
    Ok(joined == (k - from) + tok.count(after_head, false)?)
}

/// The ids a completions prompt gets before and after its text (e.g. BOS); none in chat.
fn specials(tok: &Tokenizer, mode: Mode) -> Result<(Vec<u32>, Vec<u32>), DatasetError> {
    if !matches!(mode, Mode::Text | Mode::TokenIds) {
        return Ok((Vec::new(), Vec::new()));
    }
    let bare = tok.encode("Hello", false)?;
    let with = tok.encode("Hello", true)?;
    let found = (0..=with.len().saturating_sub(bare.len()))
        .find(|&i| with[i..].starts_with(&bare))
        .map(|i| (with[..i].to_vec(), with[i + bare.len()..].to_vec()));
    Ok(found.unwrap_or_default())
}
