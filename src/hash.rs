//! The two non-cryptographic hashes every module shares: SplitMix64's finalizer
//! ([`mix64`], ids and draws that look random but are deterministic) and FNV-1a over
//! bytes ([`fnv1a`], any text as a stable number). A leaf: imports nothing of the crate.

/// SplitMix64's finalizer: a 64-bit mix of `x`.
pub(crate) fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a (64-bit) over `bytes`.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // FNV-1a's published test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        // SplitMix64 from state 0: its first output.
        assert_eq!(mix64(0), 0xe220_a839_7b1d_cdaf);
    }
}
