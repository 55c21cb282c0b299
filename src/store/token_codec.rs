//! The `chunk_tokens` column: a stream's token counts (`record::StreamTokens`) as a
//! compact BLOB beside its chunk times. One tag byte says where the counts came from
//! (chunks counted one token each, or the server's per-chunk usage) and whether every
//! content chunk brought exactly one token; then, unless it did, the tokens each
//! content chunk brought (LEB128 varints, one byte each for up to 127), and last the
//! tokens after the last content chunk. A stream of one token per chunk costs two bytes.
//! `choice_chunks` is a column of its own (an integer people can read with SQL).
//!
//! Rows written before schema 12 have neither column: they read with no stream counts
//! (`None`), which the metrics read as one token per content chunk, as before.

use super::chunk_codec::{push_varint, read_varint};
use crate::record::{StreamTokens, TokenSource};

/// Tags: counted from chunks or from usage, with each content chunk's tokens listed.
const CHUNKS: u8 = 1;
const USAGE: u8 = 2;
/// The same, every content chunk having brought exactly one token (none listed).
const CHUNKS_ONE_EACH: u8 = 3;
const USAGE_ONE_EACH: u8 = 4;

/// The blob of `s`.
pub(super) fn encode(s: &StreamTokens) -> Vec<u8> {
    let one_each = s.per_content().all(|k| k == 1);
    let tag = match (s.source, one_each) {
        (TokenSource::Chunks, false) => CHUNKS,
        (TokenSource::Usage, false) => USAGE,
        (TokenSource::Chunks, true) => CHUNKS_ONE_EACH,
        (TokenSource::Usage, true) => USAGE_ONE_EACH,
    };
    let mut out = Vec::with_capacity(2 + if one_each { 0 } else { s.at_content.len() });
    out.push(tag);
    if !one_each {
        s.per_content()
            .for_each(|k| push_varint(&mut out, u64::from(k)));
    }
    let tail = s.total.saturating_sub(s.through_last_content());
    push_varint(&mut out, u64::from(tail));
    out
}

/// The counts back from `blob`, for a stream of `content_chunks` content chunks and
/// `choice_chunks` choice chunks; `None` for a corrupt blob.
pub(super) fn decode(
    blob: &[u8],
    content_chunks: usize,
    choice_chunks: u32,
) -> Option<StreamTokens> {
    let (&tag, rest) = blob.split_first()?;
    let (source, one_each) = match tag {
        CHUNKS => (TokenSource::Chunks, false),
        USAGE => (TokenSource::Usage, false),
        CHUNKS_ONE_EACH => (TokenSource::Chunks, true),
        USAGE_ONE_EACH => (TokenSource::Usage, true),
        _ => return None,
    };
    let mut bytes = rest.iter();
    let mut at_content = Vec::with_capacity(content_chunks);
    let mut total = 0u32;
    for _ in 0..content_chunks {
        let k = match one_each {
            true => 1,
            false => u32::try_from(read_varint(&mut bytes)?).ok()?,
        };
        total = total.checked_add(k)?;
        at_content.push(total);
    }
    let tail = u32::try_from(read_varint(&mut bytes)?).ok()?;
    if bytes.len() > 0 {
        return None;
    }
    Some(StreamTokens {
        choice_chunks,
        at_content,
        total: total.checked_add(tail)?,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(at_content: Vec<u32>, total: u32, source: TokenSource) -> StreamTokens {
        StreamTokens {
            choice_chunks: 40,
            at_content,
            total,
            source,
        }
    }

    #[test]
    fn counts_round_trip_and_one_token_a_chunk_costs_two_bytes() {
        let one = stream((1..=32).collect(), 32, TokenSource::Chunks);
        let blob = encode(&one);
        assert_eq!(blob, vec![CHUNKS_ONE_EACH, 0]);
        assert_eq!(decode(&blob, 32, 40).unwrap(), one);
        // vLLM under ignore_eos: empty special tokens before, between and after the text.
        let gaps = stream(vec![2, 3, 6, 7, 300], 305, TokenSource::Usage);
        let blob = encode(&gaps);
        assert_eq!(blob[0], USAGE);
        assert_eq!(decode(&blob, 5, 40).unwrap(), gaps);
        let empty = stream(Vec::new(), 3, TokenSource::Chunks);
        assert_eq!(decode(&encode(&empty), 0, 40).unwrap(), empty);
    }

    #[test]
    fn corrupt_blobs_are_refused() {
        assert_eq!(decode(&[], 0, 0), None);
        assert_eq!(decode(&[9, 0], 0, 0), None);
        assert_eq!(decode(&[CHUNKS, 1], 2, 0), None, "too few counts");
        assert_eq!(decode(&[CHUNKS_ONE_EACH, 0, 0], 1, 0), None, "bytes left");
        assert_eq!(decode(&[CHUNKS, 0x80], 1, 0), None, "a cut varint");
    }
}
