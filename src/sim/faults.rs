//! Seeded fault injection. Faults are dealt from a shuffled deck of D requests, D the
//! smallest count for which every configured fraction × D is a whole number (at most
//! 10,000; fractions are rounded to that deck otherwise). Each block of D consecutive
//! inference requests gets exactly fraction × D faults of each kind, in a seeded order, so
//! a test can count them exactly. Knows nothing about HTTP.

use std::sync::Mutex;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::SimConfig;

const MAX_DECK: usize = 10_000;

/// What goes wrong with one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    #[default]
    None,
    Http429,
    Http500,
    Http503,
    Drop,
    Stall,
    Malformed,
    SlowHeaders,
    /// Not dealt from the deck: the queue held `max_queued_requests` (HTTP 503).
    QueueFull,
}

impl Fault {
    /// The HTTP status of an immediate error answer, if this fault is one.
    pub(crate) fn status(self) -> Option<u16> {
        match self {
            Fault::Http429 => Some(429),
            Fault::Http500 => Some(500),
            Fault::Http503 | Fault::QueueFull => Some(503),
            _ => None,
        }
    }
}

/// Deals the fault of request number `n` (0-based, in arrival order).
pub(crate) struct FaultDeck {
    kinds: Vec<(Fault, f64)>,
    size: usize,
    seed: u64,
    /// The most recently dealt round and its shuffled deck.
    current: Mutex<Option<(u64, Vec<Fault>)>>,
}

impl FaultDeck {
    pub(crate) fn new(cfg: &SimConfig) -> Self {
        let kinds: Vec<(Fault, f64)> = [
            (Fault::Http429, cfg.fault_http_429),
            (Fault::Http500, cfg.fault_http_500),
            (Fault::Http503, cfg.fault_http_503),
            (Fault::Drop, cfg.fault_drop),
            (Fault::Stall, cfg.fault_stall),
            (Fault::Malformed, cfg.fault_malformed),
            (Fault::SlowHeaders, cfg.fault_slow_headers),
        ]
        .into_iter()
        .filter(|(_, f)| *f > 0.0)
        .collect();
        let size = (1..=MAX_DECK)
            .find(|&d| {
                kinds.iter().all(|(_, f)| {
                    let x = f * d as f64;
                    (x - x.round()).abs() < 1e-6
                })
            })
            .unwrap_or(MAX_DECK);
        FaultDeck {
            kinds,
            size,
            seed: cfg.seed,
            current: Mutex::new(None),
        }
    }

    /// Requests per deck.
    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The fault of request `n`.
    pub(crate) fn deal(&self, n: u64) -> Fault {
        if self.kinds.is_empty() {
            return Fault::None;
        }
        let size = self.size as u64;
        let (round, pos) = (n / size, (n % size) as usize);
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.as_ref().is_none_or(|(r, _)| *r != round) {
            *current = Some((round, self.shuffled(round)));
        }
        current
            .as_ref()
            .and_then(|(_, deck)| deck.get(pos).copied())
            .unwrap_or(Fault::None)
    }

    /// The deck of one round: exact counts, seeded order.
    fn shuffled(&self, round: u64) -> Vec<Fault> {
        let mut deck = Vec::with_capacity(self.size);
        for &(kind, f) in &self.kinds {
            let count = (f * self.size as f64).round() as usize;
            deck.extend(std::iter::repeat_n(kind, count));
        }
        deck.truncate(self.size);
        deck.resize(self.size, Fault::None);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ round.wrapping_mul(0x9e37_79b9));
        deck.shuffle(&mut rng);
        deck
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deck_holds_exact_counts() {
        let cfg = SimConfig {
            fault_http_429: 0.1,
            fault_drop: 0.05,
            fault_stall: 0.02,
            ..SimConfig::default()
        };
        let deck = FaultDeck::new(&cfg);
        assert_eq!(deck.size(), 100);
        let faults: Vec<Fault> = (0..300).map(|n| deck.deal(n)).collect();
        let count = |k| faults.iter().filter(|&&f| f == k).count();
        assert_eq!(count(Fault::Http429), 30);
        assert_eq!(count(Fault::Drop), 15);
        assert_eq!(count(Fault::Stall), 6);
        assert_eq!(count(Fault::None), 249);
        assert_ne!(faults[..100], faults[100..200]);
    }

    #[test]
    fn no_faults_by_default() {
        let deck = FaultDeck::new(&SimConfig::default());
        assert!((0..50).all(|n| deck.deal(n) == Fault::None));
    }
}
