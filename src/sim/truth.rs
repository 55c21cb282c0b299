//! Ground truth: what the simulator actually did with each request, served on
//! `GET /sim/truth` so a client's TTFT and ITL errors can be measured.
//!
//! JSON shape of `GET /sim/truth` (`?reset=true` clears after reading; `DELETE /sim/truth`
//! clears):
//!
//! ```json
//! { "server_start_unix_us": 1795938471000000,
//!   "records": [ { "request_id": "chatcmpl-…", "client_request_id": null, "seq": 0,
//!       "path": "/v1/chat/completions", "stream": true, "fault": "none", "status": 200,
//!       "arrival_us": 1200, "admitted_us": 1210, "first_token_us": 201300,
//!       "last_token_us": 1461400, "tokens_sent": 64, "chunks_sent": 64,
//!       "prompt_tokens": 12, "cached_tokens": 0, "finished": true,
//!       "ended_us": 1461420 } ] }
//! ```
//!
//! Times are microseconds since the server's start instant; add `server_start_unix_us` for
//! wall-clock time. `first_token_us`/`last_token_us` are when the chunk carrying the first/last
//! output token was handed to the connection (non-streamed: when the body was). `finished`
//! is false when the response did not end normally (client gone, drop or stall fault).
//! Records appear when a response ends; the latest 1,000,000 are kept. Knows nothing about
//! HTTP.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::faults::Fault;
use super::state::SimState;

/// One request as the simulator served it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TruthRecord {
    /// The `id` the simulator gave the response.
    pub request_id: String,
    /// The request's `x-request-id` header, if any.
    pub client_request_id: Option<String>,
    /// Arrival order among inference requests (0-based); fault deck position.
    pub seq: u64,
    pub path: String,
    pub stream: bool,
    pub fault: Fault,
    /// HTTP status answered.
    pub status: u16,
    pub arrival_us: u64,
    /// When a batch slot was granted (after any queueing).
    pub admitted_us: Option<u64>,
    pub first_token_us: Option<u64>,
    pub last_token_us: Option<u64>,
    /// Output tokens written, over all choices.
    pub tokens_sent: u64,
    /// Content chunks written (streams), over all choices.
    pub chunks_sent: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    pub finished: bool,
    /// A golden request of `[checks]` the simulator recognised (`golden_answers`):
    /// whether it answered it correctly; absent for every other request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub golden_correct: Option<bool>,
    /// When the response ended: its last byte handed to the connection, or, for one
    /// that did not finish, when the simulator let it go (a client abort is seen when
    /// the next chunk cannot be written, within one inter-token time).
    pub ended_us: u64,
    /// The timing factor this generation's first-token and inter-token times were scaled
    /// by (`jitter`; 1 without jitter, 0 for a request that generated nothing).
    pub jitter: f64,
    /// Tool calls the answer made (a request that offered `tools`), and how many of them
    /// were made not to parse (`fault_tool_arguments`).
    #[serde(skip_serializing_if = "is_zero")]
    pub tool_calls: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub tool_calls_malformed: u32,
    /// The worker that served it, in a simulator with `workers` above 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<u32>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The body of `GET /sim/truth`.
#[derive(Debug, Clone, Serialize)]
pub struct TruthReport {
    pub server_start_unix_us: u64,
    pub records: Vec<TruthRecord>,
}

/// Holds a request's record while it is served; stores it when finished or dropped.
pub(crate) struct TruthGuard {
    state: Arc<SimState>,
    record: Option<TruthRecord>,
}

impl TruthGuard {
    pub(crate) fn new(state: Arc<SimState>, record: TruthRecord) -> Self {
        TruthGuard {
            state,
            record: Some(record),
        }
    }

    /// Microseconds since server start for `at`.
    pub(crate) fn us(&self, at: Instant) -> u64 {
        self.state.micros(at)
    }

    /// Edits the record in place.
    pub(crate) fn with(&mut self, f: impl FnOnce(&mut TruthRecord)) {
        if let Some(r) = self.record.as_mut() {
            f(r);
        }
    }

    /// Marks the response complete and stores the record now.
    pub(crate) fn finish(&mut self) {
        self.with(|r| r.finished = true);
        self.store();
    }

    fn store(&mut self) {
        let now = self.us(Instant::now());
        if let Some(mut r) = self.record.take() {
            r.ended_us = now;
            self.state.push_truth(r);
        }
    }
}

impl Drop for TruthGuard {
    fn drop(&mut self) {
        self.store();
    }
}
