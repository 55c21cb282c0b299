//! The `chunk_times` BLOB of a request row: the arrival of every content chunk as the
//! gaps from `sent` to the first chunk and between chunks, LEB128 varints behind a
//! one-byte format tag (2–3 bytes a chunk for gaps up to 16 ms / 2 s); zigzag-coded
//! signed gaps when a time goes backwards. The varints serve `token_codec` too.
//!
//! The `chunk_read_delays` BLOB: how long after its arrival each content chunk was read,
//! one varint of microseconds a chunk behind a tag (1 byte under 128 µs, 2 under 16 ms);
//! no blob at all when every delay is zero (an answer not timed by the kernel).

use std::time::Duration;

/// `chunk_times` tags: gaps that never go backwards (every real stream), or signed ones.
const GAPS: u8 = 1;
const SIGNED_GAPS: u8 = 2;

fn micros(d: Duration) -> i128 {
    i128::try_from(d.as_micros()).unwrap_or(i128::MAX)
}

pub(super) fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn read_varint(bytes: &mut std::slice::Iter<'_, u8>) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.next()?;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The `chunk_times` blob of `times` (µs), relative to `sent`; `None` when there are none.
pub(super) fn chunk_times(sent: Duration, times: &[Duration]) -> Option<Vec<u8>> {
    if times.is_empty() {
        return None;
    }
    let mut prev = micros(sent);
    let gaps: Vec<i128> = times
        .iter()
        .map(|t| {
            let t = micros(*t);
            let gap = t - prev;
            prev = t;
            gap
        })
        .collect();
    let signed = gaps.iter().any(|g| *g < 0);
    let mut out = Vec::with_capacity(1 + 3 * gaps.len());
    out.push(if signed { SIGNED_GAPS } else { GAPS });
    for g in gaps {
        let g = i64::try_from(g).unwrap_or(if g < 0 { i64::MIN } else { i64::MAX });
        // Zigzag: 0, -1, 1, -2, … → 0, 1, 2, 3, …
        let v = if signed {
            ((g << 1) ^ (g >> 63)) as u64
        } else {
            g as u64
        };
        push_varint(&mut out, v);
    }
    Some(out)
}

/// `chunk_times` back into the times it was made of; `None` for a corrupt blob.
pub(super) fn chunk_times_back(sent: Duration, blob: &[u8]) -> Option<Vec<Duration>> {
    let (&tag, rest) = blob.split_first()?;
    let signed = match tag {
        GAPS => false,
        SIGNED_GAPS => true,
        _ => return None,
    };
    let mut bytes = rest.iter();
    let mut at = micros(sent);
    let mut out = Vec::with_capacity(rest.len() / 2);
    while bytes.len() > 0 {
        let v = read_varint(&mut bytes)?;
        let gap = if signed {
            i128::from(((v >> 1) as i64) ^ -((v & 1) as i64))
        } else {
            i128::from(v)
        };
        at += gap;
        out.push(Duration::from_micros(u64::try_from(at).ok()?));
    }
    Some(out)
}

/// `chunk_read_delays` tag: one varint of microseconds per content chunk.
const DELAYS: u8 = 1;

/// The `chunk_read_delays` blob of `delays`; `None` when every one is zero (or there are
/// none), which reads back as no delays.
pub(super) fn read_delays(delays: &[Duration]) -> Option<Vec<u8>> {
    if delays.iter().all(Duration::is_zero) {
        return None;
    }
    let mut out = Vec::with_capacity(1 + 2 * delays.len());
    out.push(DELAYS);
    for d in delays {
        push_varint(&mut out, u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }
    Some(out)
}

/// `chunk_read_delays` back into the delays; `None` for a corrupt blob.
pub(super) fn read_delays_back(blob: &[u8]) -> Option<Vec<Duration>> {
    let (&tag, rest) = blob.split_first()?;
    if tag != DELAYS {
        return None;
    }
    let mut bytes = rest.iter();
    let mut out = Vec::with_capacity(rest.len());
    while bytes.len() > 0 {
        out.push(Duration::from_micros(read_varint(&mut bytes)?));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().copied().map(Duration::from_micros).collect()
    }

    #[test]
    fn chunk_times_round_trip_in_two_or_three_bytes_a_chunk() {
        let sent = Duration::from_micros(1_000_000);
        let times = us(&[1_020_000, 1_020_000, 1_030_000, 1_031_000, 3_031_000]);
        let blob = chunk_times(sent, &times).unwrap();
        // tag + 20000 (3 bytes) + 0 + 10000 (2) + 1000 (2) + 2000000 (3)
        assert_eq!(blob.len(), 1 + 3 + 1 + 2 + 2 + 3);
        assert_eq!(blob[0], GAPS);
        assert_eq!(chunk_times_back(sent, &blob).unwrap(), times);
        assert_eq!(chunk_times(sent, &[]), None);
    }

    #[test]
    fn times_that_go_backwards_still_round_trip() {
        let sent = Duration::from_micros(500);
        let times = us(&[400, 900, 800, 0, u64::from(u32::MAX) * 4]);
        let blob = chunk_times(sent, &times).unwrap();
        assert_eq!(blob[0], SIGNED_GAPS);
        assert_eq!(chunk_times_back(sent, &blob).unwrap(), times);
    }

    #[test]
    fn corrupt_blobs_are_refused_not_misread() {
        let sent = Duration::ZERO;
        assert_eq!(chunk_times_back(sent, &[]), None);
        assert_eq!(chunk_times_back(sent, &[9, 1]), None);
        assert_eq!(chunk_times_back(sent, &[GAPS, 0x80]), None, "a cut varint");
        assert_eq!(
            chunk_times_back(sent, &[GAPS]).unwrap(),
            Vec::<Duration>::new()
        );
    }

    #[test]
    fn read_delays_round_trip_in_a_byte_or_two_a_chunk_and_zeros_in_none() {
        let delays = us(&[0, 90, 1_500, 16_000, 0]);
        let blob = read_delays(&delays).unwrap();
        // tag + 0 (1) + 90 (1) + 1500 (2) + 16000 (2) + 0 (1)
        assert_eq!(blob.len(), 1 + 1 + 1 + 2 + 2 + 1);
        assert_eq!(read_delays_back(&blob).unwrap(), delays);
        assert_eq!(read_delays(&us(&[0, 0, 0])), None);
        assert_eq!(read_delays(&[]), None);
        assert_eq!(read_delays_back(&[]), None);
        assert_eq!(read_delays_back(&[7, 1]), None);
        assert_eq!(read_delays_back(&[DELAYS, 0x80]), None, "a cut varint");
    }
}
