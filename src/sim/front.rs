//! `Front`: one simulator URL in front of its `workers`, as a KV-aware router (llm-d,
//! Dynamo, SGLang's router) looks from the client. Each worker is a whole `SimState` (its
//! own prefix cache, batch slots, queue, counters and truth); the front picks one per
//! inference request by `route`, and answers the control routes for all of them: the
//! first worker records the requests and counts scrapes and resets, a cache reset clears
//! every worker's cache, the truth is every worker's in arrival order. Knows nothing about
//! HTTP routing beyond reading one header.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;

use super::state::SimState;
use super::truth::TruthReport;
use crate::hash::{fnv1a, mix64 as mix};
use crate::plan::sim_settings::RouteRule;

pub(crate) struct Front {
    workers: Vec<Arc<SimState>>,
    rule: RouteRule,
    header: String,
    /// Requests routed round robin so far (all of them, or those without the header).
    turn: AtomicU64,
    /// Requests routed so far (the draw of `random`).
    routed: AtomicU64,
    /// `sticky`: each session's worker, and how many sessions each holds.
    sticky: Mutex<Sticky>,
}

/// Sessions remembered by `route = "sticky"`; the oldest is forgotten first.
const STICKY_SESSIONS: usize = 65_536;

#[derive(Default)]
struct Sticky {
    worker_of: HashMap<u64, u32>,
    /// Sessions in the order they were first seen.
    order: VecDeque<u64>,
    /// Sessions each worker holds.
    held: Vec<u64>,
}

impl Sticky {
    /// The worker of session `key`: its own, or (a new one) the one holding the fewest.
    fn worker(&mut self, key: u64, workers: usize) -> u32 {
        if let Some(&w) = self.worker_of.get(&key) {
            return w;
        }
        self.held.resize(workers, 0);
        if self.order.len() >= STICKY_SESSIONS {
            if let Some(old) = self.order.pop_front() {
                if let Some(w) = self.worker_of.remove(&old) {
                    self.held[w as usize] = self.held[w as usize].saturating_sub(1);
                }
            }
        }
        let w = (0..workers).min_by_key(|&w| (self.held[w], w)).unwrap_or(0);
        self.held[w] += 1;
        self.worker_of.insert(key, w as u32);
        self.order.push_back(key);
        w as u32
    }
}

impl Front {
    /// The front of `first` and `first.cfg.workers - 1` siblings of it.
    pub(crate) fn new(first: SimState) -> Front {
        let n = first.cfg.workers.max(1) as usize;
        let rule = first.cfg.route.unwrap_or_default();
        let header = first.cfg.session_header().to_ascii_lowercase();
        let mut workers = Vec::with_capacity(n);
        for _ in 1..n {
            workers.push(Arc::new(first.sibling()));
        }
        workers.insert(0, Arc::new(first));
        Front {
            workers,
            rule,
            header,
            turn: AtomicU64::new(0),
            routed: AtomicU64::new(0),
            sticky: Mutex::new(Sticky::default()),
        }
    }

    /// The first worker: the settings, the recorded requests, the control counters.
    pub(crate) fn main(&self) -> &Arc<SimState> {
        &self.workers[0]
    }

    pub(crate) fn workers(&self) -> &[Arc<SimState>] {
        &self.workers
    }

    /// Whether there are several workers (then records and series name theirs).
    pub(crate) fn routes(&self) -> bool {
        self.workers.len() > 1
    }

    /// The worker (its number and state) an inference request with `headers` goes to.
    pub(crate) fn pick(&self, headers: &HeaderMap) -> (u32, Arc<SimState>) {
        let n = self.workers.len() as u64;
        let at = match n {
            1 => 0,
            _ => {
                let draw = self.routed.fetch_add(1, Ordering::Relaxed);
                let session = match self.rule {
                    r if r.reads_session() => headers.get(self.header.as_str()),
                    _ => None,
                };
                match (self.rule, session) {
                    (RouteRule::Session, Some(v)) => mix(fnv1a(v.as_bytes())) % n,
                    (RouteRule::Sticky, Some(v)) => match self.sticky.lock() {
                        Ok(mut t) => u64::from(t.worker(fnv1a(v.as_bytes()), n as usize)),
                        Err(_) => mix(fnv1a(v.as_bytes())) % n,
                    },
                    (RouteRule::Random, _) => mix(self.main().cfg.seed ^ mix(draw)) % n,
                    _ => self.turn.fetch_add(1, Ordering::Relaxed) % n,
                }
            }
        };
        (at as u32, self.workers[at as usize].clone())
    }

    /// Clears every worker's prefix cache.
    pub(crate) fn reset_cache(&self) {
        for w in &self.workers {
            w.reset_cache();
        }
    }

    /// Every worker's ground truth, in arrival order (`reset`: and forgets it).
    pub(crate) fn truth(&self, reset: bool) -> TruthReport {
        let mut report = self.main().truth(reset);
        for w in &self.workers[1..] {
            report.records.extend(w.truth(reset).records);
        }
        report.records.sort_by_key(|r| r.seq);
        report
    }

    /// Ends every worker's open streams.
    pub(crate) fn close(&self) {
        for w in &self.workers {
            w.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::tokens::TokenCounter;
    use crate::sim::SimConfig;

    fn front(route: Option<RouteRule>) -> Front {
        let cfg = SimConfig {
            workers: 4,
            route,
            ..SimConfig::default()
        };
        Front::new(SimState::new(cfg, TokenCounter::load(None).unwrap(), true))
    }

    fn with_session(id: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-session-id", id.parse().unwrap());
        h
    }

    #[test]
    fn sessions_stick_and_the_rest_go_round_robin() {
        let f = front(None);
        let none = HeaderMap::new();
        let plain: Vec<u32> = (0..8).map(|_| f.pick(&none).0).collect();
        assert_eq!(plain, [0, 1, 2, 3, 0, 1, 2, 3]);
        let a = f.pick(&with_session("00000000000000aa")).0;
        assert!((0..20).all(|_| f.pick(&with_session("00000000000000aa")).0 == a));
        let spread: std::collections::BTreeSet<u32> = (0..64)
            .map(|k| f.pick(&with_session(&format!("{k:016x}"))).0)
            .collect();
        assert_eq!(spread.len(), 4, "sessions spread over every worker");
        // The header-less requests' turn was not taken by the sessions.
        assert_eq!(f.pick(&none).0, 0);
    }

    #[test]
    fn round_robin_and_random_ignore_the_session() {
        let rr = front(Some(RouteRule::RoundRobin));
        let s = with_session("00000000000000aa");
        let order: Vec<u32> = (0..8).map(|_| rr.pick(&s).0).collect();
        assert_eq!(order, [0, 1, 2, 3, 0, 1, 2, 3]);
        let draws = |f: &Front| -> Vec<u32> { (0..40).map(|_| f.pick(&s).0).collect() };
        let (a, b) = (
            draws(&front(Some(RouteRule::Random))),
            draws(&front(Some(RouteRule::Random))),
        );
        assert_eq!(a, b, "seeded");
        assert!(a.windows(2).any(|w| w[0] == w[1]), "not round robin: {a:?}");
        assert_eq!(a.iter().collect::<std::collections::BTreeSet<_>>().len(), 4);
    }

    #[test]
    fn sticky_spreads_new_sessions_evenly_and_keeps_them() {
        let f = front(Some(RouteRule::Sticky));
        let first: Vec<u32> = (0..8)
            .map(|k| f.pick(&with_session(&format!("{k:016x}"))).0)
            .collect();
        assert_eq!(first, [0, 1, 2, 3, 0, 1, 2, 3], "the fewest sessions first");
        for (k, worker) in first.iter().enumerate() {
            let again = f.pick(&with_session(&format!("{k:016x}"))).0;
            assert_eq!(again, *worker, "session {k} sticks");
        }
        assert_eq!(f.pick(&HeaderMap::new()).0, 0, "no header: round robin");
        // The table is bounded: the oldest session is forgotten, and its worker's count.
        let mut t = Sticky::default();
        for key in 0..(STICKY_SESSIONS as u64 + 3) {
            t.worker(key, 4);
        }
        assert_eq!(t.worker_of.len(), STICKY_SESSIONS);
        assert_eq!(t.held.iter().sum::<u64>(), STICKY_SESSIONS as u64);
        assert!(!t.worker_of.contains_key(&0));
    }
}
