//! Incremental server-sent-events decoder: bytes in, events out. No HTTP in here.
//!
//! Correct for any split of the byte stream; lines end with `\r\n`, `\n` or `\r`;
//! `:` lines are comments (llama.cpp sends `: ping`); several `data:` lines make one
//! event joined by `\n`; a blank line ends an event. `[DONE]` and error objects are
//! ordinary data here: the caller interprets them.
//!
//! Hot path: line ends are found with `memchr` (SIMD); a line that arrives whole is never
//! copied into the line buffer; the only copy is the event's data into a reused buffer.
//!
//! Bounded: a line or an event's joined data longer than the decoder's limit
//! ([`SseDecoder::set_max_event`]) is an error ([`SseTooLong`]) instead of a buffer that
//! grows with whatever the server sends.

/// One decoded event. Borrowed from the decoder until the callback returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, if the event had one.
    pub event: Option<&'a str>,
    pub data: &'a [u8],
}

/// A line or an event of the stream was longer than the decoder's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE line or event longer than {limit} bytes")]
pub struct SseTooLong {
    pub limit: usize,
}

/// The decoder's state between two pieces of the stream.
#[derive(Debug)]
pub struct SseDecoder {
    /// A line started in an earlier piece and not yet ended.
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event: Vec<u8>,
    /// The previous piece ended with `\r`: a `\n` opening the next one belongs to it.
    skip_lf: bool,
    /// Longest line, and longest joined data of one event, in bytes.
    max_event: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event: Vec::new(),
            skip_lf: false,
            max_event: usize::MAX,
        }
    }
}

impl SseDecoder {
    pub fn new() -> SseDecoder {
        SseDecoder::default()
    }

    /// Bounds a line, and an event's joined data, to `bytes` (default: unbounded).
    pub(crate) fn set_max_event(&mut self, bytes: usize) {
        self.max_event = bytes;
    }

    fn too_long(&self) -> SseTooLong {
        SseTooLong {
            limit: self.max_event,
        }
    }

    /// Forgets any partial event, keeping the buffers' capacity (reuse across streams).
    pub fn reset(&mut self) {
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        self.skip_lf = false;
    }

    /// Feeds the next piece of the stream; calls `on_event` for every event it completes.
    /// After an error the decoder must be `reset` before it is used again.
    pub(crate) fn feed(
        &mut self,
        mut input: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseTooLong> {
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(rest) = input.strip_prefix(b"\n") {
                input = rest;
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', input) {
            let mut next = i + 1;
            if input[i] == b'\r' {
                match input.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if self.line.len() + i > self.max_event {
                return Err(self.too_long());
            }
            if self.line.is_empty() {
                self.process_line(&input[..i], &mut on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&input[..i]);
                let result = self.process_line(&line, &mut on_event);
                line.clear();
                self.line = line;
                result?;
            }
            input = &input[next..];
        }
        if self.line.len() + input.len() > self.max_event {
            return Err(self.too_long());
        }
        self.line.extend_from_slice(input);
        Ok(())
    }

    /// The stream ended: an unterminated last line and a pending event are delivered
    /// (servers often omit the final blank line).
    pub fn finish(&mut self, mut on_event: impl FnMut(SseEvent<'_>)) -> Result<(), SseTooLong> {
        self.skip_lf = false;
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut on_event)?;
        }
        self.process_line(b"", &mut on_event)
    }

    fn process_line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), SseTooLong> {
        if line.is_empty() {
            if self.has_data {
                let event = std::str::from_utf8(&self.event)
                    .ok()
                    .filter(|e| !e.is_empty());
                on_event(SseEvent {
                    event,
                    data: &self.data,
                });
            }
            self.data.clear();
            self.event.clear();
            self.has_data = false;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + usize::from(self.has_data) > self.max_event {
                    return Err(self.too_long());
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &[u8] = b": ping - 2026-11-29 07:57:57\r\n\r\n\
data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n\
data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
data:{\"x\":1}\r\rdata: line one\ndata: line two\n\n\
event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n\
id: 7\nretry: 10\n\n\
data: [DONE]\n\n";

    fn decode(pieces: &[&[u8]]) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        let mut d = SseDecoder::new();
        let mut push = |e: SseEvent<'_>| {
            out.push((
                e.event.map(str::to_string),
                String::from_utf8(e.data.to_vec()).unwrap(),
            ))
        };
        for p in pieces {
            d.feed(p, &mut push).unwrap();
        }
        d.finish(&mut push).unwrap();
        out
    }

    fn expected() -> Vec<(Option<String>, String)> {
        vec![
            (
                None,
                r#"{"choices":[{"delta":{"role":"assistant"}}]}"#.into(),
            ),
            (None, r#"{"choices":[{"delta":{"content":"a"}}]}"#.into()),
            (None, r#"{"x":1}"#.into()),
            (None, "line one\nline two".into()),
            (
                Some("error".into()),
                r#"{"error":{"message":"boom"}}"#.into(),
            ),
            (None, "[DONE]".into()),
        ]
    }

    #[test]
    fn whole_stream() {
        assert_eq!(decode(&[STREAM]), expected());
    }

    #[test]
    fn every_split_offset_gives_the_same_events() {
        for i in 0..=STREAM.len() {
            let (a, b) = STREAM.split_at(i);
            assert_eq!(decode(&[a, b]), expected(), "split at {i}");
        }
    }

    #[test]
    fn every_pair_of_splits_and_byte_by_byte() {
        for i in 0..=STREAM.len() {
            for j in i..=STREAM.len() {
                let pieces = [&STREAM[..i], &STREAM[i..j], &STREAM[j..]];
                assert_eq!(decode(&pieces), expected(), "splits at {i}, {j}");
            }
        }
        let bytes: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(decode(&bytes), expected());
    }

    #[test]
    fn missing_final_blank_line_still_delivers() {
        assert_eq!(
            decode(&[b"data: [DONE]"]),
            vec![(None, "[DONE]".to_string())]
        );
        assert_eq!(
            decode(&[b"data: [DONE]\n"]),
            vec![(None, "[DONE]".to_string())]
        );
    }

    /// The limit holds for a line split over pieces, a line in one piece, and an event's
    /// data joined from short lines; the stream's events fit in it.
    #[test]
    fn lines_and_events_over_the_limit_are_errors() {
        let mut d = SseDecoder::new();
        d.set_max_event(64);
        let mut n = 0;
        d.feed(STREAM, |_| n += 1).unwrap();
        d.finish(|_| n += 1).unwrap();
        assert_eq!(n, 6);
        let long = [b"data: ".as_slice(), &[b'x'; 100], b"\n\n"].concat();
        let mut d = SseDecoder::new();
        d.set_max_event(64);
        assert_eq!(d.feed(&long, |_| {}), Err(SseTooLong { limit: 64 }));
        let mut d = SseDecoder::new();
        d.set_max_event(64);
        let pieces: Vec<&[u8]> = long.chunks(10).collect();
        let failed = pieces.iter().any(|p| d.feed(p, |_| {}).is_err());
        assert!(failed, "a line growing over pieces");
        let mut d = SseDecoder::new();
        d.set_max_event(64);
        let many = b"data: 0123456789\n".repeat(10);
        assert!(d.feed(&many, |_| {}).is_err(), "joined data lines");
        let mut d = SseDecoder::new();
        d.set_max_event(64);
        let endless = [b'y'; 40];
        assert!(d.feed(&endless, |_| {}).is_ok());
        assert!(d.feed(&endless, |_| {}).is_err(), "a line with no end");
    }

    #[test]
    fn comments_only_give_nothing() {
        assert!(decode(&[b": ping\n\n: ping\r\n\r\n"]).is_empty());
    }
}
