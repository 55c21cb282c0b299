//! A strict, borrowing JSON cursor for the streaming hot path: the chunk readers walk an
//! object's keys, read the few values a metric needs and skip everything else without
//! building it. No API knowledge in here (see `stream_chunk.rs`), no HTTP.
//!
//! Strict like `serde_json`: the JSON grammar is checked everywhere, also in skipped
//! values (string escapes, control characters, number syntax, nesting up to 128 levels,
//! nothing after the value); strings that are read are decoded and checked to be UTF-8.
//! Errors are `serde_json::Error`s so callers see one error type.

use std::borrow::Cow;

use serde::de::Error as _;

pub(crate) type Scan<T> = Result<T, serde_json::Error>;

/// serde_json's own recursion limit.
const MAX_DEPTH: u32 = 128;

/// A position in one JSON text.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor {
            bytes,
            at: 0,
            depth: 0,
        }
    }

    /// An error at the cursor's position.
    pub(crate) fn error(&self, what: &str) -> serde_json::Error {
        serde_json::Error::custom(format!("{what} at byte {}", self.at))
    }

    pub(crate) fn peek(&mut self) -> Option<u8> {
        while let Some(&c) = self.bytes.get(self.at) {
            if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(c);
            }
            self.at += 1;
        }
        None
    }

    fn eat(&mut self, c: u8) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, c: u8, what: &str) -> Scan<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Scan<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters")),
        }
    }

    /// Consumes a `null` if one comes next.
    pub(crate) fn null(&mut self) -> Scan<bool> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.literal(b"null")?;
        Ok(true)
    }

    fn literal(&mut self, word: &[u8]) -> Scan<()> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn enter(&mut self) -> Scan<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        Ok(())
    }

    /// Walks an object: `on_key` gets each (decoded) key with the cursor at its value and
    /// must consume that value.
    pub(crate) fn object(&mut self, on_key: impl FnMut(&mut Self, &[u8]) -> Scan<()>) -> Scan<()> {
        self.walk_object(true, on_key)
    }

    /// `object`; keys are checked to be UTF-8 when `check_keys` (serde_json checks the
    /// field names of what it reads, not of what it skips).
    fn walk_object(
        &mut self,
        check_keys: bool,
        mut on_key: impl FnMut(&mut Self, &[u8]) -> Scan<()>,
    ) -> Scan<()> {
        self.expect(b'{', "expected an object")?;
        self.enter()?;
        if !self.eat(b'}') {
            loop {
                if self.peek() != Some(b'"') {
                    return Err(self.error("expected a key"));
                }
                let key = self.key(check_keys)?;
                self.expect(b':', "expected `:`")?;
                on_key(self, &key)?;
                if !self.eat(b',') {
                    self.expect(b'}', "expected `,` or `}`")?;
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// Walks an array: `on_item` gets the item's position with the cursor at the item and
    /// must consume it.
    pub(crate) fn array(
        &mut self,
        mut on_item: impl FnMut(&mut Self, usize) -> Scan<()>,
    ) -> Scan<()> {
        self.expect(b'[', "expected an array")?;
        self.enter()?;
        if !self.eat(b']') {
            let mut n = 0;
            loop {
                on_item(self, n)?;
                n += 1;
                if !self.eat(b',') {
                    self.expect(b']', "expected `,` or `]`")?;
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// A key, compared as bytes: decoded and checked to be UTF-8 when `check`, as it is
    /// when serde_json reads a field name; raw otherwise (it is skipped).
    fn key(&mut self, check: bool) -> Scan<Cow<'a, [u8]>> {
        let (raw, escaped) = self.raw_string()?;
        let key = match escaped && check {
            false => Cow::Borrowed(raw),
            true => Cow::Owned(self.unescape(raw)?),
        };
        if check && !key.is_ascii() && std::str::from_utf8(&key).is_err() {
            return Err(self.error("invalid UTF-8 in a key"));
        }
        Ok(key)
    }

    /// A string value, decoded.
    pub(crate) fn string(&mut self) -> Scan<Cow<'a, str>> {
        if self.peek() != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        let (raw, escaped) = self.raw_string()?;
        let invalid = || self.error("invalid UTF-8 in a string");
        if escaped {
            return String::from_utf8(self.unescape(raw)?)
                .map(Cow::Owned)
                .map_err(|_| invalid());
        }
        std::str::from_utf8(raw)
            .map(Cow::Borrowed)
            .map_err(|_| invalid())
    }

    /// `null` or a string.
    pub(crate) fn opt_string(&mut self) -> Scan<Option<Cow<'a, str>>> {
        if self.null()? {
            return Ok(None);
        }
        self.string().map(Some)
    }

    /// `null` or an unsigned integer that fits in a u32.
    pub(crate) fn opt_u32(&mut self) -> Scan<Option<u32>> {
        if self.null()? {
            return Ok(None);
        }
        let start = self.at;
        if self.peek() == Some(b'-') {
            return Err(self.error("expected an unsigned integer"));
        }
        let (_, fraction) = self.number()?;
        if fraction {
            return Err(self.error("expected an integer"));
        }
        let digits = std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or("");
        digits
            .trim_start()
            .parse::<u32>()
            .map(Some)
            .map_err(|_| self.error("integer out of range for u32"))
    }

    /// `true` for a `true`, `false` for any other value (skipped, its grammar checked).
    pub(crate) fn is_true(&mut self) -> Scan<bool> {
        if self.peek() == Some(b't') {
            self.literal(b"true")?;
            return Ok(true);
        }
        self.skip().map(|()| false)
    }

    /// Skips one value of any kind, checking its grammar.
    pub(crate) fn skip(&mut self) -> Scan<()> {
        match self.peek() {
            Some(b'"') => self.raw_string().map(drop),
            Some(b'{') => self.walk_object(false, |c, _| c.skip()),
            Some(b'[') => self.array(|c, _| c.skip()),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            _ => Err(self.error("expected a value")),
        }
    }

    /// A number by the JSON grammar; returns (negative, has a fraction or exponent).
    fn number(&mut self) -> Scan<(bool, bool)> {
        self.peek();
        let negative = self.bytes.get(self.at) == Some(&b'-');
        if negative {
            self.at += 1;
        }
        match self.bytes.get(self.at) {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("invalid number")),
        }
        let mut fraction = false;
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.some_digits()?;
            fraction = true;
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
            fraction = true;
        }
        Ok((negative, fraction))
    }

    fn digits(&mut self) {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Scan<()> {
        let start = self.at;
        self.digits();
        if self.at == start {
            return Err(self.error("invalid number"));
        }
        Ok(())
    }

    /// The bytes between the quotes of a string (the cursor is at the opening quote), and
    /// whether they hold escapes. Escapes are checked; control characters are refused.
    fn raw_string(&mut self) -> Scan<(&'a [u8], bool)> {
        self.at += 1;
        let start = self.at;
        let mut escaped = false;
        loop {
            let rest = &self.bytes[self.at..];
            let Some(n) = special_at(rest) else {
                self.at = self.bytes.len();
                return Err(self.error("unterminated string"));
            };
            self.at += n;
            match rest[n] {
                b'"' => {
                    self.at += 1;
                    return Ok((&self.bytes[start..self.at - 1], escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.skip_escape()?;
                }
                _ => return Err(self.error("control character in a string")),
            }
        }
    }

    fn skip_escape(&mut self) -> Scan<()> {
        match self.bytes.get(self.at + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.at += 2,
            Some(b'u') => {
                self.at += 2;
                self.hex4_at(self.at)?;
                self.at += 4;
            }
            _ => return Err(self.error("invalid escape")),
        }
        Ok(())
    }

    fn hex4_at(&self, at: usize) -> Scan<u16> {
        let hex = self
            .bytes
            .get(at..at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("invalid \\u escape"))?;
        u16::from_str_radix(hex, 16).map_err(|_| self.error("invalid \\u escape"))
    }

    /// Decodes the escapes of a string whose grammar `raw_string` already checked.
    fn unescape(&self, raw: &[u8]) -> Scan<Vec<u8>> {
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while let Some(j) = memchr::memchr(b'\\', &raw[i..]) {
            out.extend_from_slice(&raw[i..i + j]);
            i += j + 1;
            let simple = match raw[i] {
                b'b' => Some(b'\x08'),
                b'f' => Some(b'\x0c'),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                b'u' => None,
                other => Some(other),
            };
            match simple {
                Some(b) => {
                    out.push(b);
                    i += 1;
                }
                None => i = self.unicode_escape(raw, i, &mut out)?,
            }
        }
        out.extend_from_slice(&raw[i..]);
        Ok(out)
    }

    /// `raw[u_at]` is the `u` of a `\uXXXX` escape: appends the character (joining a
    /// surrogate pair) and returns the index after the escape.
    fn unicode_escape(&self, raw: &[u8], u_at: usize, out: &mut Vec<u8>) -> Scan<usize> {
        let hex = |at: usize| -> Scan<u32> {
            let h = raw
                .get(at..at + 4)
                .ok_or_else(|| self.error("invalid \\u escape"))?;
            let h = std::str::from_utf8(h).map_err(|_| self.error("invalid \\u escape"))?;
            u32::from_str_radix(h, 16).map_err(|_| self.error("invalid \\u escape"))
        };
        let first = hex(u_at + 1)?;
        let mut next = u_at + 5;
        let code = match first {
            0xD800..=0xDBFF => {
                if raw.get(next..next + 2) != Some(&b"\\u"[..]) {
                    return Err(self.error("lone leading surrogate in a \\u escape"));
                }
                let low = hex(next + 2)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(self.error("invalid surrogate pair in a \\u escape"));
                }
                next += 6;
                0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error("lone trailing surrogate in a \\u escape")),
            c => c,
        };
        let c = char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))?;
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Ok(next)
    }
}

/// The first `"`, `\\` or control character (below 0x20) in `bytes`: the bytes that end
/// or interrupt a JSON string. Looks at 8 bytes at a time: strings in chunks are short,
/// where a call into a vectorised search costs more than it saves.
fn special_at(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte of `x` below `n`, exact for the lowest such byte (bytes
    // above it may be flagged by the borrow, which does not matter for "the first").
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGHS;
    let mut base = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let quote = below(w ^ (ONES * u64::from(b'"')), 1);
        let backslash = below(w ^ (ONES * u64::from(b'\\')), 1);
        let found = quote | backslash | below(w, 0x20);
        if found != 0 {
            return Some(base + (found.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    bytes[base..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| base + i)
}

#[cfg(test)]
mod tests;
