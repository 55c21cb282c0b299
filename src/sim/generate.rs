//! The timing model of one generation on a continuous-batching server, shared by streamed
//! and non-streamed answers:
//! - a request waits FIFO for one of `max_num_seqs` batch slots (`vllm:num_requests_waiting`);
//! - once admitted, its prompt is looked up in the prefix cache and the first token is due at
//!   `admitted + ttft_base + uncached prompt tokens / prefill_tokens_per_s` (admitted = arrival
//!   when a slot was free; `ttft_base` is measured from arrival in that case);
//! - each further token is due `itl_base + itl_slope × max(0, running − itl_knee)` after the
//!   previous one (batch size read when the token is scheduled); a chunk of
//!   `tokens_per_chunk` tokens is due when its last token is;
//! - with `jitter`, both times are scaled by one seeded factor per generation, uniform on
//!   [1 − jitter, 1 + jitter] (recorded in its truth);
//! - deadlines are absolute (previous deadline + step), so timer jitter never accumulates; every
//!   chunk already due when the server wakes goes out in the same write;
//! - tokio timers have 1 ms resolution and round up, so the simulator sets them `TIMER_LEAD`
//!   (1 ms) ahead: a chunk goes out within about 1 ms either side of its deadline, plus any
//!   OS scheduling delay (the ground truth records the actual write times).
//!
//! Knows nothing about routing; the wire format lives in `format`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::OwnedSemaphorePermit;

use super::faults::Fault;
use super::format::{ChunkFormat, UsageNumbers};
use super::request::{Api, Job};
use super::state::SimState;
use super::truth::{TruthGuard, TruthRecord};

/// How far ahead of a deadline timers are set (tokio rounds timers up to the next ms).
pub(crate) const TIMER_LEAD: Duration = Duration::from_millis(1);

/// Sleeps until about `deadline` (see `TIMER_LEAD`).
pub(crate) async fn sleep_until(deadline: tokio::time::Instant) {
    let at = deadline.checked_sub(TIMER_LEAD).unwrap_or(deadline);
    if at > tokio::time::Instant::now() {
        tokio::time::sleep_until(at).await;
    }
}

/// Counts a request in `vllm:num_requests_waiting` while it exists.
struct Waiting(Arc<SimState>);

impl Waiting {
    fn new(st: &Arc<SimState>) -> Self {
        st.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(st.clone())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One request being generated.
pub(crate) struct Generation {
    pub st: Arc<SimState>,
    pub job: Job,
    pub fmt: ChunkFormat,
    /// Output tokens per choice.
    pub out_len: u32,
    pub finish: &'static str,
    pub offset: u64,
    pub fault: Fault,
    pub arrival: Instant,
    pub permit: Option<Slot>,
    /// Deadline of the next chunk.
    pub next: tokio::time::Instant,
    /// Tokens sent per choice.
    pub sent: u32,
    pub cached: u64,
    pub truth: TruthGuard,
    /// The factor this generation's times are scaled by (`jitter_factor`).
    pub jitter: f64,
    /// A tool-call answer's calls (see `tools`): its answer tokens carry them, not text.
    pub tool_calls: Option<Vec<super::tools::PlannedCall>>,
}

/// The timing factor of the generation that arrived `seq`-th: uniform on
/// [1 − jitter, 1 + jitter], seeded by the simulator's seed and `seq`; 1 without jitter.
pub(crate) fn jitter_factor(st: &SimState, seq: u64) -> f64 {
    let j = st.cfg.jitter;
    if j <= 0.0 {
        return 1.0;
    }
    let mut rng =
        ChaCha8Rng::seed_from_u64(st.cfg.seed ^ 0x6a69_7474 ^ seq.wrapping_mul(0x9e37_79b9));
    1.0 + j * rng.gen_range(-1.0..=1.0)
}

/// A running sequence's batch slot and the KV-cache blocks it holds (its prompt and its
/// whole output, reserved at admission): `vllm:kv_cache_usage_perc` is the blocks held
/// by running sequences over the cache's, as vLLM counts it (blocks of finished requests
/// kept only for prefix reuse are free to evict, so they are not in use).
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    st: Arc<SimState>,
    blocks: u64,
}

impl Slot {
    fn hold(st: &Arc<SimState>, permit: OwnedSemaphorePermit, tokens: u64) -> Slot {
        let blocks = tokens.div_ceil(u64::from(st.cfg.block_size.max(1)));
        st.held_blocks.fetch_add(blocks, Ordering::Relaxed);
        Slot {
            _permit: permit,
            st: st.clone(),
            blocks,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.st
            .held_blocks
            .fetch_sub(self.blocks, Ordering::Relaxed);
    }
}

/// A generation dropped before it finished (the client gone, a drop or stall fault)
/// gives its slot and blocks back at once, as the slot's own drop does; under
/// `fault_leak_aborted` it keeps them for good (the slot is forgotten, never released).
impl Drop for Generation {
    fn drop(&mut self) {
        if let Some(slot) = self.permit.take() {
            if self.st.cfg.fault_leak_aborted {
                std::mem::forget(slot);
            }
        }
    }
}

/// Output length and finish reason: `ignore_eos` gives exactly the limit; otherwise a seeded
/// natural length (exponential with mean `natural_output_mean`), at least `min_tokens`,
/// capped by the limit.
pub(crate) fn output_length(st: &SimState, job: &Job, seq: u64) -> (u32, &'static str) {
    let natural = || {
        let mut rng = ChaCha8Rng::seed_from_u64(st.cfg.seed ^ seq.wrapping_mul(0x2545_f491));
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        let mean = f64::from(st.cfg.natural_output_mean.max(1));
        ((-mean * u.ln()).ceil() as u32).max(1)
    };
    let limit = job.max_tokens.map(|m| m.max(1));
    match (job.ignore_eos, limit) {
        (true, Some(m)) => (m, "length"),
        (_, Some(m)) => {
            let n = natural().max(job.min_tokens);
            if n >= m {
                (m, "length")
            } else {
                (n, "stop")
            }
        }
        (_, None) => (natural().max(job.min_tokens).max(1), "stop"),
    }
}

impl Generation {
    pub(crate) fn new(
        st: Arc<SimState>,
        job: Job,
        seq: u64,
        fault: Fault,
        record: TruthRecord,
    ) -> Self {
        let (mut out_len, mut finish) = output_length(&st, &job, seq);
        let golden = super::golden::reply(&st.cfg, &job, seq);
        let tool_calls = match golden.as_ref().and_then(|g| g.call.clone()) {
            Some(call) => Some(vec![call]),
            None => super::tools::plan_calls(&st.cfg, &job.tools, seq),
        };
        if tool_calls.is_some() {
            finish = "tool_calls";
        }
        let prefix = match job.api {
            Api::Chat => "chatcmpl-",
            Api::Completions => "cmpl-",
            Api::Responses => "resp_",
        };
        let id = format!("{prefix}{}", record.request_id);
        let created = st.start_unix_us / 1_000_000 + st.start.elapsed().as_secs();
        let mut fmt = ChunkFormat::new(job.api, id.clone(), job.model.clone(), created);
        fmt.empty = super::format::Empty {
            every: st.cfg.empty_chunks,
            answer: None,
        };
        if let Some(pieces) = golden.as_ref().and_then(|g| g.pieces.clone()) {
            let limit = job.max_tokens.unwrap_or(u32::MAX).max(1);
            out_len = (pieces.len() as u32).clamp(1, limit);
            finish = if (pieces.len() as u32) > limit {
                "length"
            } else {
                "stop"
            };
            fmt.empty.every = 0;
            fmt.empty.answer = Some(pieces);
        }
        let jitter = jitter_factor(&st, seq);
        let mut truth = TruthGuard::new(st.clone(), record);
        let calls = tool_calls.as_deref().unwrap_or_default();
        let malformed = calls.iter().filter(|c| c.malformed).count() as u32;
        truth.with(|r| {
            r.request_id = id.clone();
            r.jitter = jitter;
            r.tool_calls = calls.len() as u32;
            r.tool_calls_malformed = malformed;
            r.golden_correct = golden.as_ref().map(|g| g.correct);
        });
        let arrival = Instant::now();
        Generation {
            fmt,
            out_len,
            finish,
            offset: seq.wrapping_mul(7),
            fault,
            arrival,
            permit: None,
            next: tokio::time::Instant::from_std(arrival),
            sent: 0,
            cached: 0,
            truth,
            job,
            st,
            jitter,
            tool_calls,
        }
    }

    /// Sets the arrival instant (the handler's, before any parsing).
    pub(crate) fn arrived_at(&mut self, at: Instant) {
        self.arrival = at;
    }

    /// Waits for a batch slot, consults the prefix cache and sets the first token's deadline.
    pub(crate) async fn admit(&mut self) -> bool {
        let (permit, admitted) = match self.st.slots.clone().try_acquire_owned() {
            Ok(p) => (p, self.arrival),
            Err(_) => {
                let _waiting = Waiting::new(&self.st);
                match self.st.slots.clone().acquire_owned().await {
                    Ok(p) => (p, Instant::now()),
                    Err(_) => return false,
                }
            }
        };
        let tokens =
            self.job.prompt_tokens() + u64::from(self.out_len) * u64::from(self.job.choices());
        self.permit = Some(Slot::hold(&self.st, permit, tokens));
        self.cached = self.st.admit_prompts(&self.job.prompts);
        let uncached = self.job.prompt_tokens().saturating_sub(self.cached);
        let rate = self.st.cfg.prefill_tokens_per_s;
        let prefill = if rate > 0.0 {
            crate::units::duration_from_secs(uncached as f64 / rate)
        } else {
            Duration::ZERO
        };
        let first = (self.st.cfg.ttft_base.0 + prefill).mul_f64(self.jitter);
        self.next = tokio::time::Instant::from_std(admitted + first);
        let (at, cached) = (self.truth.us(admitted), self.cached);
        self.truth.with(|r| {
            r.admitted_us = Some(at);
            r.cached_tokens = cached;
        });
        true
    }

    /// Tokens in the next chunk of each choice (a chunk never spans the end of the
    /// reasoning).
    pub(crate) fn next_chunk_len(&self) -> u32 {
        let left = match self.reasoning_len() {
            r if self.sent < r => r - self.sent,
            _ => self.out_len - self.sent,
        };
        self.st.cfg.tokens_per_chunk.max(1).min(left)
    }

    /// Output tokens of each choice that are reasoning (chat only): the first ones.
    pub(crate) fn reasoning_len(&self) -> u32 {
        match self.job.api {
            Api::Chat => self.st.cfg.reasoning_tokens.min(self.out_len),
            _ => 0,
        }
    }

    /// Moves the next deadline past a chunk of `tokens` tokens.
    pub(crate) fn advance(&mut self, tokens: u32) {
        self.next += self.itl() * tokens;
    }

    /// The inter-token time now, scaled by this generation's jitter.
    pub(crate) fn itl(&self) -> Duration {
        self.st.itl().mul_f64(self.jitter)
    }

    /// Records that `tokens` tokens per choice went out at `now`.
    pub(crate) fn note_sent(&mut self, tokens: u32, now: Instant) {
        let choices = u64::from(self.job.choices());
        let total = u64::from(tokens) * choices;
        self.st
            .counters
            .generation_tokens
            .fetch_add(total, Ordering::Relaxed);
        let first = self.sent == 0;
        let at = self.truth.us(now);
        self.truth.with(|r| {
            if first {
                r.first_token_us = Some(at);
            }
            r.last_token_us = Some(at);
            r.tokens_sent += total;
            r.chunks_sent += choices;
        });
        self.sent += tokens;
    }

    /// Gives the batch slot back (the sequence stops running).
    pub(crate) fn release(&mut self) {
        self.permit = None;
    }

    /// Token index where a mid-stream fault strikes.
    pub(crate) fn fault_at(&self) -> u32 {
        self.out_len / 2
    }

    pub(crate) fn usage(&self) -> UsageNumbers {
        let choices = u64::from(self.job.choices());
        UsageNumbers {
            prompt: self.job.prompt_tokens(),
            completion: u64::from(self.out_len) * choices,
            cached: self.cached,
            reasoning: u64::from(self.reasoning_len()) * choices,
        }
    }

    /// The response completed normally.
    pub(crate) fn finished(&mut self) {
        self.release();
        self.st.counters.requests_ok.fetch_add(1, Ordering::Relaxed);
        self.truth.finish();
    }
}
