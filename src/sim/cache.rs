//! The simulated prefix cache: blocks of `block_size` tokens, each keyed by a hash of all
//! tokens up to and including the block, kept in least-recently-used order with room for
//! `cache_blocks` blocks. Pure data structure: knows nothing about HTTP or timing.
//!
//! As in vLLM, a lookup never reports the whole prompt as cached: at least the last prompt
//! token is computed, so the hit is the longest run of cached full blocks within the first
//! `prompt_len - 1` tokens (a 1,024-token prompt seen before with 16-token blocks: 1,008).

use crate::hash::mix64 as mix;
use std::collections::{BTreeMap, HashMap};

/// Hashes of the prompt's full blocks, each covering the whole prefix up to its end.
pub(crate) fn block_hashes(tokens: &[u32], block_size: usize) -> Vec<u64> {
    let block_size = block_size.max(1);
    let mut out = Vec::with_capacity(tokens.len() / block_size);
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for block in tokens.chunks_exact(block_size) {
        for &t in block {
            h = mix(h ^ u64::from(t));
        }
        out.push(h);
    }
    out
}

/// LRU set of block hashes.
pub(crate) struct PrefixCache {
    capacity: usize,
    block_size: usize,
    clock: u64,
    last_use: HashMap<u64, u64>,
    by_age: BTreeMap<u64, u64>,
}

impl PrefixCache {
    pub(crate) fn new(capacity: usize, block_size: usize) -> Self {
        PrefixCache {
            capacity,
            block_size: block_size.max(1),
            clock: 0,
            last_use: HashMap::new(),
            by_age: BTreeMap::new(),
        }
    }

    /// Looks the prompt up, then stores all its full blocks; returns the cached token count.
    pub(crate) fn lookup_and_insert(&mut self, hashes: &[u64], prompt_len: usize) -> usize {
        let usable = prompt_len.saturating_sub(1) / self.block_size;
        let hit_blocks = hashes
            .iter()
            .take(usable)
            .take_while(|h| self.last_use.contains_key(h))
            .count();
        for &h in hashes {
            self.touch(h);
        }
        self.evict();
        hit_blocks * self.block_size
    }

    /// The share of the cache's blocks stored, 0..=1 (what the eviction tests read; the
    /// `kv_cache_usage_perc` gauge counts blocks held by running sequences instead).
    #[cfg(test)]
    fn usage(&self) -> f64 {
        if self.capacity == 0 {
            return 0.0;
        }
        (self.last_use.len() as f64 / self.capacity as f64).min(1.0)
    }

    /// Forgets every block (`POST /reset_prefix_cache`).
    pub(crate) fn clear(&mut self) {
        self.last_use.clear();
        self.by_age.clear();
    }

    fn touch(&mut self, h: u64) {
        self.clock += 1;
        if let Some(old) = self.last_use.insert(h, self.clock) {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.clock, h);
    }

    fn evict(&mut self) {
        while self.last_use.len() > self.capacity {
            let Some((_, h)) = self.by_age.pop_first() else {
                break;
            };
            self.last_use.remove(&h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(n: u32, salt: u32) -> Vec<u32> {
        (0..n).map(|i| i * 7 + salt).collect()
    }

    #[test]
    fn repeated_prompt_hits_all_but_the_last_block() {
        let mut c = PrefixCache::new(1000, 16);
        let t = tokens(1024, 0);
        let h = block_hashes(&t, 16);
        assert_eq!(c.lookup_and_insert(&h, t.len()), 0);
        assert_eq!(c.lookup_and_insert(&h, t.len()), 1008);
        let longer = tokens(1030, 0);
        let h2 = block_hashes(&longer, 16);
        assert_eq!(c.lookup_and_insert(&h2, longer.len()), 1024);
    }

    #[test]
    fn shared_prefix_stops_at_first_difference() {
        let mut c = PrefixCache::new(1000, 4);
        let a = tokens(40, 0);
        let mut b = a.clone();
        b[22] = 9999;
        c.lookup_and_insert(&block_hashes(&a, 4), 40);
        assert_eq!(c.lookup_and_insert(&block_hashes(&b, 4), 40), 20);
    }

    #[test]
    fn lru_evicts_oldest_blocks() {
        let mut c = PrefixCache::new(4, 4);
        let a = tokens(17, 0);
        let b = tokens(17, 1);
        c.lookup_and_insert(&block_hashes(&a, 4), 17);
        c.lookup_and_insert(&block_hashes(&b, 4), 17);
        assert_eq!(c.lookup_and_insert(&block_hashes(&a, 4), 17), 0);
        assert_eq!(c.usage(), 1.0);
        c.clear();
        assert_eq!(c.usage(), 0.0);
        assert_eq!(c.lookup_and_insert(&block_hashes(&a, 4), 17), 0);
        assert_eq!(c.usage(), 1.0);
        let mut half = PrefixCache::new(8, 4);
        half.lookup_and_insert(&block_hashes(&a, 4), 17);
        assert_eq!(half.usage(), 0.5);
    }
}
