//! The one rule for reading a text a person hands perfplan (plans and their imports,
//! dataset files, traces, prefix files, prompt files, tokenizer configs, chat and body
//! templates): UTF-8, a leading byte-order mark skipped, and line ends read as `\n`
//! (`\r\n` and a lone `\r` both). Every reader of such a text goes through here, so a
//! file saved by an editor on Windows reads exactly like the same file saved elsewhere.
//! A leaf: it imports nothing of the crate.

use std::path::Path;

/// The UTF-8 byte-order mark.
const BOM: &str = "\u{feff}";

/// Why bytes are not a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not UTF-8 text (invalid byte at offset {offset})")]
pub struct NotUtf8 {
    /// Offset of the first invalid byte in the bytes as given (a byte-order mark counted).
    pub offset: usize,
}

/// `bytes` as text by the rule: UTF-8, a byte-order mark skipped, line ends as `\n`.
pub fn decode(bytes: Vec<u8>) -> Result<String, NotUtf8> {
    let text = String::from_utf8(bytes).map_err(|e| NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })?;
    Ok(normalize(text))
}

/// A text already decoded, by the same rule: a byte-order mark skipped, line ends as `\n`.
pub fn normalize(text: String) -> String {
    let text = match text.strip_prefix(BOM) {
        Some(rest) => rest.to_string(),
        None => text,
    };
    if !text.contains('\r') {
        return text;
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Reads a text file by the rule. Invalid UTF-8 is an `InvalidData` error naming the
/// offset of the first bad byte.
pub fn read(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    decode(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The first control character of `text` other than tab and newline (a NUL, an escape,
/// a form feed, a DEL, a C1 control…), with its byte offset.
pub(crate) fn control_char(text: &str) -> Option<(usize, char)> {
    text.char_indices()
        .find(|(_, c)| c.is_control() && !matches!(c, '\t' | '\n'))
}

/// A control character as a person reads it: `NUL`, `U+001B`.
pub(crate) fn describe_control(c: char) -> String {
    match c {
        '\0' => "NUL".to_string(),
        '\r' => "CR".to_string(),
        _ => format!("U+{:04X}", c as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bom_is_skipped_and_line_ends_read_as_newlines() {
        let bytes = b"\xEF\xBB\xBFa\r\nb\rc\n".to_vec();
        assert_eq!(decode(bytes).unwrap(), "a\nb\nc\n");
        assert_eq!(decode(b"plain\n".to_vec()).unwrap(), "plain\n");
        // Only a leading mark is one: inside a text it is a character like any other.
        assert_eq!(normalize("x\u{feff}".into()), "x\u{feff}");
    }

    #[test]
    fn invalid_utf8_names_its_offset() {
        assert_eq!(decode(b"ab\xFFc".to_vec()), Err(NotUtf8 { offset: 2 }));
    }

    #[test]
    fn control_characters_are_found_but_tabs_and_newlines_are_text() {
        assert_eq!(control_char("a\tb\nc"), None);
        assert_eq!(control_char("ab\0c"), Some((2, '\0')));
        assert_eq!(control_char("é\u{1b}"), Some((2, '\u{1b}')));
        assert_eq!(describe_control('\0'), "NUL");
        assert_eq!(describe_control('\u{1b}'), "U+001B");
    }
}
