//! `Balance`: which of an endpoint's replicas a request goes to. A pure rule of the
//! request's index and session id, so shares are exact (round robin), reproducible
//! (random, from the seed) or sticky (session).

use crate::hash::mix64;

/// How requests are spread over an endpoint's replicas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Balance {
    /// Request `index` goes to replica `index % n`: exact shares.
    #[default]
    RoundRobin,
    /// A hash of the seed and the request's index picks the replica (independent draws).
    Random { seed: u64 },
    /// A hash of the request's session id picks the replica, so a conversation (or group)
    /// sticks to one; requests without a session go round robin.
    Session,
}

impl Balance {
    /// The replica (of `n`) of request `index` with session id `session`.
    pub(crate) fn pick(self, n: usize, index: u64, session: Option<u64>) -> usize {
        let n64 = n.max(1) as u64;
        let at = match (self, session) {
            (Balance::RoundRobin, _) | (Balance::Session, None) => index % n64,
            (Balance::Random { seed }, _) => mix64(seed ^ mix64(index)) % n64,
            (Balance::Session, Some(s)) => mix64(s) % n64,
        };
        at as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_is_exact_and_session_sticks() {
        let mut counts = [0; 3];
        for i in 0..30 {
            counts[Balance::RoundRobin.pick(3, i, Some(7))] += 1;
        }
        assert_eq!(counts, [10, 10, 10]);
        let s = Balance::Session;
        assert!((0..50).all(|i| s.pick(4, i, Some(99)) == s.pick(4, 0, Some(99))));
        assert_eq!(s.pick(4, 5, None), 1, "no session: round robin");
        let spread: std::collections::BTreeSet<usize> =
            (0..64).map(|k| s.pick(4, 0, Some(k))).collect();
        assert_eq!(spread.len(), 4, "sessions spread over every replica");
    }

    #[test]
    fn random_is_seeded() {
        let r = Balance::Random { seed: 42 };
        let a: Vec<usize> = (0..20).map(|i| r.pick(4, i, None)).collect();
        let b: Vec<usize> = (0..20).map(|i| r.pick(4, i, None)).collect();
        let c: Vec<usize> = (0..20)
            .map(|i| Balance::Random { seed: 43 }.pick(4, i, None))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
