//! What a run's metrics are: `RunSummary` (every metric of the vocabulary, failure
//! classes, estimated/truncated counts, client health), the options behind them and the
//! SLOs of goodput. `summarize` folds a slice of records with `fold::Fold`, the one
//! computation every path uses. Only measured requests count; distributions of timings
//! and tokens use successful requests only.

use std::collections::BTreeMap;

use super::definitions::MetricDefinitions;
use super::fold::Fold;
use crate::record::facts::ConnectionFacts;
use crate::record::{RequestRecord, RunFacts};

pub use super::capacity::Hardware;
pub use super::slo::{Slo, SloQuantity};

/// Settings of a summary that the records do not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOptions {
    pub definitions: MetricDefinitions,
    pub slos: Vec<Slo>,
    /// Client CPU seconds during the run (`RunOutput::client_cpu`).
    pub client_cpu_s: Option<f64>,
    /// Seconds the driving thread waited for a CPU (`RunOutput::client_wait`).
    pub client_wait_s: Option<f64>,
    /// Wall seconds the CPU figure covers (`RunOutput::wall`); default: the run's duration.
    pub client_wall_s: Option<f64>,
    /// Cores the client can use; default 1 (the engine drives all requests from one task).
    /// Count the simulator's too when it runs in-process.
    pub cpu_cores: Option<f64>,
    /// From the server's `/metrics` before/after the run (the suite's job).
    pub server_cache_hit_ratio: Option<f64>,
    /// The run's planned hit ratio (the share of its prompt tokens shared with a prompt
    /// sent before, as the server sees them), reported beside the measured hit ratios,
    /// never in their place.
    pub planned_prefix_share: Option<f64>,
    /// The chat template's fixed opening's part of `planned_prefix_share` alone.
    pub planned_template_share: Option<f64>,
    /// Inputs per request (embeddings batch size, rerank documents) for `inputs_per_s`.
    pub inputs_per_request: Option<u32>,
    /// Send lateness p99 above this flags the run `client_bound`.
    pub lateness_limit_ms: f64,
    /// Client CPU above this share of its cores flags the run `client_bound`.
    pub cpu_share_limit: f64,
    /// The driving thread waiting for a CPU this share of the run flags it `client_bound`.
    pub wait_share_limit: f64,
    /// The users of `output_tps_per_user`: a closed loop's concurrency (none for other
    /// loads, whose users are the mean in flight).
    pub users: Option<u32>,
    /// What the endpoint runs on, for per-accelerator and cost metrics.
    pub hardware: Option<Hardware>,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            definitions: MetricDefinitions::Perfplan,
            slos: Vec::new(),
            client_cpu_s: None,
            client_wait_s: None,
            client_wall_s: None,
            cpu_cores: None,
            server_cache_hit_ratio: None,
            planned_prefix_share: None,
            planned_template_share: None,
            inputs_per_request: None,
            lateness_limit_ms: 5.0,
            cpu_share_limit: 0.9,
            wait_share_limit: 0.25,
            users: None,
            hardware: None,
        }
    }
}

/// Every metric of one run, plus the counts behind them.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Every name of `names::all_names()`; `None` when unknown. Times in milliseconds.
    pub values: BTreeMap<String, Option<f64>>,
    /// Measured requests (warmup and priming excluded).
    pub requests: u64,
    /// Failed measured requests by outcome (`"http"`, `"timeout"`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Failed measured requests by HTTP status.
    pub http_statuses: BTreeMap<u16, u64>,
    /// Successful requests whose input / output tokens are the client's count (no usage).
    pub estimated_input: u64,
    pub estimated_output: u64,
    /// Successful requests with no token count at all (neither usage nor client count).
    pub unknown_output: u64,
    /// Successful requests that ended without a finish_reason (e.g. `[DONE]` only).
    pub truncated: u64,
    /// Successful requests with no output at all (`RequestRecord::no_output`).
    pub no_output: u64,
    /// Connections the measured requests opened (see `Connections`).
    pub connections: Connections,
    /// Requests sent but not measured.
    pub unmeasured: u64,
    pub client_bound: Option<String>,
    pub definitions: MetricDefinitions,
    /// The ITL percentiles come from the bounded histogram (see `columns::Gaps`).
    pub itl_bounded: bool,
}

impl RunSummary {
    /// The facts stored with a run: the counts behind its metrics and its flags;
    /// `stored` is the number of its request rows in the database.
    pub(crate) fn facts(&self, stored: u64) -> RunFacts {
        RunFacts {
            requests: Some(self.requests),
            stored_rows: Some(stored),
            failures: Some(self.failures.clone()),
            http_statuses: Some(
                self.http_statuses
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
            ),
            estimated_input: Some(self.estimated_input),
            estimated_output: Some(self.estimated_output),
            unknown_output: Some(self.unknown_output),
            truncated: Some(self.truncated),
            no_output: Some(self.no_output),
            client_bound: Some(self.client_bound.clone()),
            metric_definitions: Some(self.definitions.as_str().to_string()),
            itl_bounded: Some(self.itl_bounded),
            connections: Some(self.connections.facts()),
            ..RunFacts::default()
        }
    }
}

/// The connections measured requests opened: none on a pooled endpoint whose connections
/// were all opened before the clock; one per request with `fresh_connections`; others when
/// the server closed kept-alive connections or an open loop outgrew its pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Connections {
    /// Measured requests that opened their connection (`connect` set).
    pub opened: u64,
    /// Of those, the lean client's TLS connections (`tls` set) ...
    pub tls_handshakes: u64,
    /// ... and of these, the handshakes that resumed an earlier session.
    pub tls_resumed: u64,
}

impl Connections {
    /// The run's facts section (`connections`).
    pub fn facts(&self) -> ConnectionFacts {
        ConnectionFacts {
            opened: self.opened,
            tls_handshakes: self.tls_handshakes,
            tls_resumed: self.tls_resumed,
        }
    }
}

/// Computes every metric from `records` (all of a run's records; warmup is skipped here):
/// the records folded one by one, as a live run folds them when they are written.
pub fn summarize(records: &[RequestRecord], opts: &SummaryOptions) -> RunSummary {
    let mut fold = Fold::new(opts.definitions, &opts.slos);
    records.iter().for_each(|r| fold.add(r));
    fold.finish(opts)
}

/// The shortest run whose client CPU share can say the client was saturated.
pub(crate) const MIN_CPU_WALL_S: f64 = 1.0;

pub(super) fn client_bound(s: &RunSummary, opts: &SummaryOptions) -> Option<String> {
    let mut reasons = Vec::new();
    if let Some(p99) = s.values.get("lateness_p99").copied().flatten() {
        if p99 > opts.lateness_limit_ms {
            reasons.push(format!(
                "send lateness p99 {p99:.1} ms exceeds {:.1} ms: the client could not send on time",
                opts.lateness_limit_ms
            ));
        }
    }
    // Answers read late: the kernel's stamps keep their times exact, but a closed loop's
    // slot frees only when the client reads the end, and its sends wait on the same core.
    // Twice the lateness limit: a read's delay is the client's own, where a send's
    // lateness also holds the schedule's.
    let read_limit = 2.0 * opts.lateness_limit_ms;
    if let Some(p99) = s.values.get("client_delay_p99").copied().flatten() {
        if p99 > read_limit {
            reasons.push(format!(
                "the client read answers p99 {p99:.1} ms after they arrived (over {read_limit:.1} \
                 ms): it was too busy to read on time"
            ));
        }
    }
    // The engine drives every request from one task: one core is its ceiling. A run of
    // a few milliseconds is mostly the engine's start: its CPU share says nothing.
    let cores = opts.cpu_cores.unwrap_or(1.0);
    let wall = opts
        .client_wall_s
        .or_else(|| s.values.get("duration_s").copied().flatten())
        .unwrap_or(0.0);
    let ratio = s.values.get("client_cpu_ratio").copied().flatten();
    if let Some(ratio) = ratio.filter(|_| wall >= MIN_CPU_WALL_S) {
        if ratio >= opts.cpu_share_limit * cores {
            reasons.push(format!(
                "client used {ratio:.2} of {cores} CPU cores: the client was saturated"
            ));
        }
    }
    let waited = s.values.get("client_wait_ratio").copied().flatten();
    if let Some(w) = waited.filter(|_| wall >= MIN_CPU_WALL_S) {
        if w >= opts.wait_share_limit {
            reasons.push(format!(
                "the client's thread waited for a CPU {:.0}% of the run: another process \
                 held its cores",
                w * 100.0
            ));
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}
