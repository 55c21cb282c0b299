//! The body of an HTTP/1.1 response: `Content-Length`, chunked (de-chunked in place,
//! extensions and trailers read exactly so the connection can be reused) or until the
//! connection closes. A pure state machine over byte slices; knows nothing about sockets.

use std::io;

use super::h1_head::{bad, Framing};

/// Where a body stands: framing and, for chunked bodies, the decoder state.
#[derive(Debug)]
pub(crate) struct BodyState {
    framing: Framing,
    remaining: u64,
    chunk: ChunkState,
    ended: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    Size { value: u64, digits: bool },
    Ext(u64),
    SizeLf(u64),
    Data(u64),
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    TrailerLf { empty: bool },
    Done,
}

impl BodyState {
    pub(crate) fn new(framing: Framing) -> BodyState {
        let remaining = match framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        BodyState {
            framing,
            remaining,
            chunk: ChunkState::Size {
                value: 0,
                digits: false,
            },
            ended: false,
        }
    }

    /// The body has ended (the connection may serve another request unless `UntilClose`).
    pub(crate) fn done(&self) -> bool {
        match self.framing {
            Framing::Length(_) => self.remaining == 0,
            Framing::Chunked => self.chunk == ChunkState::Done,
            Framing::UntilClose => self.ended,
        }
    }

    /// The connection closed before the body ended: the end of a body framed by the
    /// close (`Ok(false)`), a cut body otherwise.
    pub(crate) fn at_close(&mut self) -> io::Result<bool> {
        match self.framing {
            Framing::UntilClose => {
                self.ended = true;
                Ok(false)
            }
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside the body",
            )),
        }
    }

    /// Consumes framing from `input`, handing data to `on_data`; returns bytes used.
    pub(crate) fn feed(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> io::Result<usize> {
        match self.framing {
            Framing::UntilClose => {
                on_data(input);
                Ok(input.len())
            }
            Framing::Length(_) => {
                let n = (self.remaining.min(input.len() as u64)) as usize;
                if n > 0 {
                    on_data(&input[..n]);
                }
                self.remaining -= n as u64;
                Ok(n)
            }
            Framing::Chunked => self.feed_chunked(input, &mut on_data),
        }
    }

    fn feed_chunked(&mut self, input: &[u8], on_data: &mut impl FnMut(&[u8])) -> io::Result<usize> {
        use ChunkState::*;
        let mut i = 0;
        while i < input.len() && self.chunk != Done {
            if let Data(rem) = self.chunk {
                let n = rem.min((input.len() - i) as u64) as usize;
                on_data(&input[i..i + n]);
                i += n;
                let left = rem - n as u64;
                self.chunk = if left == 0 { DataCr } else { Data(left) };
                continue;
            }
            let b = input[i];
            i += 1;
            self.chunk = match (self.chunk, b) {
                (Size { value, .. }, b) if b.is_ascii_hexdigit() => {
                    let d = u64::from((b as char).to_digit(16).unwrap_or(0));
                    let v = value.checked_mul(16).and_then(|v| v.checked_add(d));
                    Size {
                        value: v.ok_or_else(|| bad("chunk size overflow"))?,
                        digits: true,
                    }
                }
                (
                    Size {
                        value,
                        digits: true,
                    },
                    b'\r',
                )
                | (Ext(value), b'\r') => SizeLf(value),
                (
                    Size {
                        value,
                        digits: true,
                    },
                    b'\n',
                )
                | (Ext(value), b'\n') => after_size(value),
                (
                    Size {
                        value,
                        digits: true,
                    },
                    b';' | b' ' | b'\t',
                ) => Ext(value),
                (Ext(value), _) => Ext(value),
                (SizeLf(value), b'\n') => after_size(value),
                (DataCr, b'\r') => DataLf,
                (DataCr, b'\n') | (DataLf, b'\n') => Size {
                    value: 0,
                    digits: false,
                },
                (TrailerStart, b'\r') => TrailerLf { empty: true },
                (TrailerStart, b'\n') => Done,
                (TrailerStart, _) | (TrailerLine, _) if b != b'\r' => TrailerLine,
                (TrailerLine, b'\r') => TrailerLf { empty: false },
                (TrailerLf { empty: true }, b'\n') => Done,
                (TrailerLf { empty: false }, b'\n') => TrailerStart,
                _ => return Err(bad("malformed chunked body")),
            };
        }
        Ok(i)
    }
}

fn after_size(value: u64) -> ChunkState {
    if value == 0 {
        ChunkState::TrailerStart
    } else {
        ChunkState::Data(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNKED: &[u8] =
        b"5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";

    fn decode(pieces: &[&[u8]]) -> (Vec<u8>, bool) {
        let mut b = BodyState::new(Framing::Chunked);
        let mut out = Vec::new();
        for p in pieces {
            let mut rest: &[u8] = p;
            while !rest.is_empty() && !b.done() {
                let n = b.feed(rest, |d| out.extend_from_slice(d)).unwrap();
                rest = &rest[n..];
            }
        }
        (out, b.done())
    }

    #[test]
    fn chunked_any_split() {
        for i in 0..=CHUNKED.len() {
            let (out, done) = decode(&[&CHUNKED[..i], &CHUNKED[i..]]);
            assert_eq!(out, b"hello 0123456789", "split {i}");
            assert!(done);
        }
        let (_, done) = decode(&[b"0\r\n\r\n"]);
        assert!(done);
        let mut b = BodyState::new(Framing::Chunked);
        assert!(b.feed(b"zz\r\n", |_| {}).is_err());
    }
}
