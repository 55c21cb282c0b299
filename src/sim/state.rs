//! State shared by every request of one simulator: settings, batch slots, prefix cache,
//! counters, received bodies and ground truth. Knows nothing about HTTP routing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::{Notify, Semaphore};

use super::cache::{block_hashes, PrefixCache};
use super::faults::FaultDeck;
use super::histograms::Histograms;
use super::tokens::TokenCounter;
use super::truth::{TruthRecord, TruthReport};
use super::SimConfig;

/// One request as received: method, path, headers (names lowercase, secret values
/// redacted) and the JSON body (`null` when none or not JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceivedRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

/// Monotonic counters exported on `/metrics` under vLLM's names.
#[derive(Default)]
pub(crate) struct Counters {
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub cache_queries: AtomicU64,
    pub cache_hits: AtomicU64,
    pub requests_ok: AtomicU64,
}

pub(crate) struct SimState {
    pub cfg: SimConfig,
    pub tokens: TokenCounter,
    pub deck: FaultDeck,
    pub slots: Arc<Semaphore>,
    pub waiting: AtomicU64,
    /// KV-cache blocks held by running sequences (see `generate::Slot`).
    pub held_blocks: AtomicU64,
    pub counters: Counters,
    /// Latency histograms under vLLM's names, fed from the ground truth.
    pub histograms: Histograms,
    pub start: Instant,
    pub start_unix_us: u64,
    /// Arrival order of inference requests, shared by the workers of one simulator so
    /// that faults, seeds and request ids follow the order at its one URL.
    seq: Arc<AtomicU64>,
    cache: Mutex<PrefixCache>,
    received: Option<Mutex<Vec<ReceivedRequest>>>,
    truth: Mutex<VecDeque<TruthRecord>>,
    /// Control routes served: `/metrics` scrapes and prefix-cache resets.
    pub scrapes: AtomicU64,
    pub resets: AtomicU64,
    /// `METHOD path` of requests no route serves (outside the mount), the first `MAX_UNSERVED`.
    unserved: Mutex<Vec<String>>,
    closing: AtomicBool,
    pub closed: Notify,
}

/// Unserved requests remembered (a long-running simulator must not grow without bound).
const MAX_UNSERVED: usize = 1000;

/// Ground-truth records kept (about 250 MB at most); older ones are forgotten.
pub(crate) const MAX_TRUTH: usize = 1_000_000;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SimState {
    pub(crate) fn new(cfg: SimConfig, tokens: TokenCounter, record_bodies: bool) -> Self {
        let start_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        SimState {
            deck: FaultDeck::new(&cfg),
            slots: Arc::new(Semaphore::new(cfg.max_num_seqs.max(1) as usize)),
            cache: Mutex::new(PrefixCache::new(
                cfg.cache_blocks as usize,
                cfg.block_size as usize,
            )),
            waiting: AtomicU64::new(0),
            held_blocks: AtomicU64::new(0),
            counters: Counters::default(),
            histograms: Histograms::default(),
            start: Instant::now(),
            start_unix_us,
            seq: Arc::new(AtomicU64::new(0)),
            received: record_bodies.then(|| Mutex::new(Vec::new())),
            truth: Mutex::new(VecDeque::new()),
            scrapes: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            unserved: Mutex::new(Vec::new()),
            closing: AtomicBool::new(false),
            closed: Notify::new(),
            tokens,
            cfg,
        }
    }

    /// Another worker of the same simulator: its own batch slots, queue, prefix cache,
    /// counters and truth; the same settings, tokenizer, clock and arrival order. Requests
    /// are recorded by the first worker only, so a worker keeps none.
    pub(crate) fn sibling(&self) -> Self {
        let mut st = SimState::new(self.cfg.clone(), self.tokens.clone(), false);
        st.start = self.start;
        st.start_unix_us = self.start_unix_us;
        st.seq = self.seq.clone();
        st
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn micros(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_micros() as u64
    }

    /// Sequences holding a batch slot.
    pub(crate) fn running(&self) -> u64 {
        let max = self.cfg.max_num_seqs.max(1) as usize;
        max.saturating_sub(self.slots.available_permits()) as u64
    }

    /// Inter-token time at the current batch size.
    pub(crate) fn itl(&self) -> Duration {
        let over = self.running().saturating_sub(u64::from(self.cfg.itl_knee));
        self.cfg.itl_base.0 + self.cfg.itl_slope.0 * over.min(u64::from(u32::MAX)) as u32
    }

    /// Looks the prompts up in the prefix cache (and stores them); counts the query.
    pub(crate) fn admit_prompts(&self, prompts: &[Vec<u32>]) -> u64 {
        let total: u64 = prompts.iter().map(|p| p.len() as u64).sum();
        self.counters
            .prompt_tokens
            .fetch_add(total, Ordering::Relaxed);
        if !self.cfg.prefix_cache {
            return 0;
        }
        let hashes: Vec<Vec<u64>> = prompts
            .iter()
            .map(|p| block_hashes(p, self.cfg.block_size as usize))
            .collect();
        let mut cached = 0u64;
        {
            let mut cache = lock(&self.cache);
            for (p, h) in prompts.iter().zip(&hashes) {
                cached += cache.lookup_and_insert(h, p.len()) as u64;
            }
        }
        self.counters
            .cache_queries
            .fetch_add(total, Ordering::Relaxed);
        self.counters
            .cache_hits
            .fetch_add(cached, Ordering::Relaxed);
        cached
    }

    /// The share of the prefix cache's blocks in use, 0..=1.
    /// The share of the KV cache's blocks held by running sequences, 0..=1.
    pub(crate) fn kv_usage(&self) -> f64 {
        let total = self.cfg.cache_blocks.max(1) as f64;
        (self.held_blocks.load(Ordering::Relaxed) as f64 / total).min(1.0)
    }

    pub(crate) fn reset_cache(&self) {
        lock(&self.cache).clear();
    }

    /// Whether requests are kept (in-process simulators); building a record costs.
    pub(crate) fn keeps_requests(&self) -> bool {
        self.received.is_some()
    }

    pub(crate) fn record_request(&self, req: ReceivedRequest) {
        if let Some(r) = &self.received {
            lock(r).push(req);
        }
    }

    /// Remembers a request no route serves.
    pub(crate) fn record_unserved(&self, what: String) {
        let mut list = lock(&self.unserved);
        if list.len() < MAX_UNSERVED {
            list.push(what);
        }
    }

    pub(crate) fn unserved(&self) -> Vec<String> {
        lock(&self.unserved).clone()
    }

    pub(crate) fn received(&self) -> Vec<ReceivedRequest> {
        self.received
            .as_ref()
            .map(|r| lock(r).clone())
            .unwrap_or_default()
    }

    /// Counts the record in the histograms and keeps it; past `MAX_TRUTH` records the
    /// oldest is forgotten.
    pub(crate) fn push_truth(&self, r: TruthRecord) {
        self.histograms.observe(&r);
        if self.cfg.truth {
            let mut t = lock(&self.truth);
            if t.len() >= MAX_TRUTH {
                t.pop_front();
            }
            t.push_back(r);
        }
    }

    pub(crate) fn truth(&self, reset: bool) -> TruthReport {
        let mut t = lock(&self.truth);
        let records = if reset {
            t.drain(..).collect()
        } else {
            t.iter().cloned().collect()
        };
        TruthReport {
            server_start_unix_us: self.start_unix_us,
            records,
        }
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
        self.closed.notify_waiters();
    }

    /// Waits until the server shuts down (stalled responses wait here).
    pub(crate) async fn until_closed(&self) {
        let notified = self.closed.notified();
        if self.is_closing() {
            return;
        }
        notified.await;
    }
}
