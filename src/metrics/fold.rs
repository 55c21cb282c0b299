//! `Fold`: a run's metrics built one record at a time, so nothing holds the records. A
//! live run folds each record as the database writer stores it; `merge`, an SLA
//! search's pools and `summarize` fold stored or given records with the same code, so
//! they cannot disagree. Its state is the columns of `columns` (a few bytes a request
//! per time quantity, a table per token count, gaps bounded) and counters.

use std::collections::BTreeMap;
use std::time::Duration;

use super::capacity::{capacity, Throughput};
use super::columns::{Counts, Gaps, Times};
use super::definitions::{timing, MetricDefinitions, Timing};
use super::names::all_names;
use super::rates::Rates;
use super::slo::{meets, RequestFigures};
use super::stats::fill_from;
use super::summary::{client_bound, Connections, RunSummary, Slo, SummaryOptions};
use crate::record::{AnswerCheck, Outcome, Phase, RequestRecord};

/// The running state of one run's metrics.
#[derive(Debug, Clone)]
pub struct Fold {
    definitions: MetricDefinitions,
    slos: Vec<Slo>,
    counts: Tallies,
    /// First measured send and last measured end.
    span: Option<(Duration, Duration)>,
    /// (cached, prompt) tokens of successful requests reporting both.
    cache: (u64, u64),
    ttft: Times,
    ttfo: Times,
    tpot: Times,
    latency: Times,
    lateness: Times,
    connect: Times,
    tls_handshake: Times,
    /// Per request timed by the kernel: how long after arrival its first content was read.
    client_delay: Times,
    /// Measured requests that read an answer: (timed by the kernel, all).
    clock: (u64, u64),
    /// Per request: output tokens / latency, and (output tokens − 1) / (latency − TTFT).
    request_output_tps: Rates,
    decode_tps: Rates,
    /// Per request with content chunks: output tokens over content chunks.
    tokens_per_chunk: Rates,
    /// Per token: each gap between chunks spread over the tokens it brought.
    itl: Gaps,
    /// Gaps between chunks as observed.
    chunk_gap: Gaps,
    input: Counts,
    output: Counts,
    cached: Counts,
    reasoning: Counts,
    answer: Counts,
    /// Golden requests (`Phase::Check`) not cancelled, by their check (`AnswerCheck::ALL`).
    answers: [u64; 4],
}

/// The counters of a run's summary.
#[derive(Debug, Clone, Default)]
struct Tallies {
    requests: u64,
    unmeasured: u64,
    ok: u64,
    good: u64,
    /// Output tokens of the good requests.
    good_output: u64,
    /// Time measured requests spent in flight (each one's end − sent), for `in_flight_mean`.
    busy: Duration,
    failures: BTreeMap<String, u64>,
    http_statuses: BTreeMap<u16, u64>,
    estimated_input: u64,
    estimated_output: u64,
    unknown_output: u64,
    truncated: u64,
    no_output: u64,
    connections: Connections,
}

/// A response that carried output but no finish_reason (e.g. a stream ended by `[DONE]`
/// alone). Read from stored fields only (a choice or content chunk, or output tokens),
/// never from the text, which rows do not keep.
fn is_truncated(r: &RequestRecord) -> bool {
    r.finish_reason.is_none()
        && (r.first_chunk.is_some()
            || !r.content_times.is_empty()
            || r.output_tokens().is_some_and(|(n, _)| n > 0))
}

impl Fold {
    /// An empty fold timing requests by `definitions`, goodput against `slos`.
    pub fn new(definitions: MetricDefinitions, slos: &[Slo]) -> Fold {
        Fold {
            definitions,
            slos: slos.to_vec(),
            counts: Tallies::default(),
            span: None,
            cache: (0, 0),
            ttft: Times::default(),
            ttfo: Times::default(),
            tpot: Times::default(),
            latency: Times::default(),
            lateness: Times::default(),
            connect: Times::default(),
            tls_handshake: Times::default(),
            client_delay: Times::default(),
            clock: (0, 0),
            request_output_tps: Rates::default(),
            decode_tps: Rates::default(),
            tokens_per_chunk: Rates::default(),
            itl: Gaps::default(),
            chunk_gap: Gaps::default(),
            input: Counts::default(),
            output: Counts::default(),
            cached: Counts::default(),
            reasoning: Counts::default(),
            answer: Counts::default(),
            answers: [0; 4],
        }
    }

    /// Adds one record of the run (any phase: only measured ones count).
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase != Phase::Measured {
            self.counts.unmeasured += 1;
            if let Some(a) = r.answer.filter(|_| r.outcome != Outcome::Cancelled) {
                let at = AnswerCheck::ALL.iter().position(|x| *x == a).unwrap_or(0);
                self.answers[at] += 1;
            }
            return;
        }
        self.counts.requests += 1;
        self.span = Some(match self.span {
            None => (r.sent, r.end),
            Some((a, b)) => (a.min(r.sent), b.max(r.end)),
        });
        // Lateness is over every measured request sent, connection setup over every one
        // that opened a connection (failed ones too).
        self.counts.busy += r.end.saturating_sub(r.sent);
        self.lateness.push(r.lateness());
        if let Some(c) = r.connect {
            self.connect.push(c);
            self.counts.connections.opened += 1;
        }
        if let Some(clock) = r.read_clock {
            self.clock.0 += u64::from(clock.kernel);
            self.clock.1 += 1;
            if let Some(d) = clock.first_delay.filter(|_| clock.kernel) {
                self.client_delay.push(d);
            }
        }
        if let Some(tls) = r.tls {
            self.tls_handshake.push(tls.took);
            self.counts.connections.tls_handshakes += 1;
            self.counts.connections.tls_resumed += u64::from(tls.resumed);
        }
        if r.outcome == Outcome::Ok {
            self.add_ok(r);
        } else {
            self.add_failed(r);
        }
    }

    fn add_failed(&mut self, r: &RequestRecord) {
        let c = &mut self.counts;
        *c.failures
            .entry(r.outcome.as_str().to_string())
            .or_default() += 1;
        if let Some(status) = r.http_status.filter(|_| r.outcome == Outcome::Http) {
            *c.http_statuses.entry(status).or_default() += 1;
        }
    }

    fn add_ok(&mut self, r: &RequestRecord) {
        let c = &mut self.counts;
        c.ok += 1;
        c.truncated += u64::from(is_truncated(r));
        c.no_output += u64::from(r.no_output());
        let t = timing(r, self.definitions);
        let out = r.output_tokens();
        let tp = out.and_then(|(n, _)| t.tpot(n));
        match out {
            Some((n, est)) => {
                self.output.push(n);
                c.estimated_output += u64::from(est);
            }
            None => c.unknown_output += 1,
        }
        if let Some((n, est)) = r.input_tokens() {
            self.input.push(n);
            c.estimated_input += u64::from(est);
        }
        if let Some(cached) = r.usage.cached_tokens {
            self.cached.push(cached);
            if let Some(prompt) = r.usage.prompt_tokens {
                self.cache.0 += u64::from(cached);
                self.cache.1 += u64::from(prompt);
            }
        }
        let figures = RequestFigures {
            timing: &t,
            ttfo: r.ttfo(),
            tpot: tp,
            output_tokens: out.map(|(n, _)| n),
        };
        if meets(&figures, &self.slos) {
            c.good += 1;
            c.good_output += out.map_or(0, |(n, _)| u64::from(n));
        }
        if let Some(x) = t.ttft {
            self.ttft.push(x);
        }
        if let Some(x) = r.ttfo() {
            self.ttfo.push(x);
        }
        if let Some(x) = tp {
            self.tpot.push(x);
        }
        self.add_rates(&t, out.map(|(n, _)| n), tp.is_some());
        self.latency.push(t.latency);
        self.add_tokens(r, &t);
    }

    /// The reasoning and answer split of a request's output, its tokens per content
    /// chunk, and its gaps: as observed (`chunk_gap`) and per token (`itl`).
    fn add_tokens(&mut self, r: &RequestRecord, t: &Timing) {
        if let Some(n) = r.reasoning_tokens() {
            self.reasoning.push(n);
        }
        if let Some(n) = r.answer_tokens() {
            self.answer.push(n);
        }
        let chunks = r.content_times.len();
        if let Some((n, _)) = r.output_tokens().filter(|_| chunks > 0) {
            self.tokens_per_chunk.push(f64::from(n) / chunks as f64);
        }
        t.gaps.iter().for_each(|g| self.chunk_gap.push(*g));
        t.per_token().for_each(|(g, k)| self.itl.push_n(g, k));
    }

    /// A request's output and decode rates (EvalScope's): output tokens / latency, and
    /// (output tokens − 1) / (latency − TTFT) when it has a TPOT. A zero time makes no rate.
    fn add_rates(&mut self, t: &Timing, output: Option<u32>, has_tpot: bool) {
        let Some(n) = output else { return };
        if !t.latency.is_zero() {
            self.request_output_tps
                .push(f64::from(n) / t.latency.as_secs_f64());
        }
        let decode = t.ttft.and_then(|f| t.latency.checked_sub(f));
        if let Some(d) = decode.filter(|d| has_tpot && !d.is_zero()) {
            self.decode_tps.push(f64::from(n - 1) / d.as_secs_f64());
        }
    }

    /// Whether the ITL percentiles carry the histogram's bounded error (more gaps than
    /// `columns::EXACT_GAPS`).
    pub(crate) fn itl_bounded(&self) -> bool {
        self.itl.bounded() || self.chunk_gap.bounded()
    }

    /// Every metric of the run; `opts` gives what records do not carry (its definitions
    /// and SLOs are the fold's own, given to `new`).
    pub fn finish(self, opts: &SummaryOptions) -> RunSummary {
        let itl_bounded = self.itl_bounded();
        let c = self.counts;
        let cancelled = c
            .failures
            .get(Outcome::Cancelled.as_str())
            .copied()
            .unwrap_or(0) as f64;
        let mut s = RunSummary {
            values: all_names().into_iter().map(|n| (n, None)).collect(),
            requests: c.requests,
            failures: c.failures,
            http_statuses: c.http_statuses,
            estimated_input: c.estimated_input,
            estimated_output: c.estimated_output,
            unknown_output: c.unknown_output,
            truncated: c.truncated,
            no_output: c.no_output,
            connections: c.connections,
            unmeasured: c.unmeasured,
            client_bound: None,
            definitions: self.definitions,
            itl_bounded,
        };
        let v = &mut s.values;
        for (name, times) in [
            ("ttft", self.ttft),
            ("ttfo", self.ttfo),
            ("tpot", self.tpot),
            ("latency", self.latency),
            ("lateness", self.lateness),
            ("connect", self.connect),
            ("tls_handshake", self.tls_handshake),
            ("client_delay", self.client_delay),
        ] {
            fill_from(v, name, &times.sorted());
        }
        fill_from(v, "itl", &self.itl.finish());
        fill_from(v, "chunk_gap", &self.chunk_gap.finish());
        fill_from(v, "tokens_per_chunk", &self.tokens_per_chunk.sorted());
        fill_from(v, "reasoning_tokens", &self.reasoning.ranked());
        fill_from(v, "answer_tokens", &self.answer.ranked());
        fill_from(v, "request_output_tps", &self.request_output_tps.sorted());
        fill_from(v, "decode_tps", &self.decode_tps.sorted());
        fill_from(v, "input_tokens", &self.input.ranked());
        fill_from(v, "output_tokens", &self.output.ranked());
        fill_from(v, "cached_tokens", &self.cached.ranked());
        let scalars = Scalars {
            ok: c.ok as f64,
            good: c.good as f64,
            good_output: c.good_output as f64,
            busy_s: c.busy.as_secs_f64(),
            requests: c.requests as f64,
            cancelled,
            duration_s: self.span.map(|(a, b)| b.saturating_sub(a).as_secs_f64()),
            input: self.input.sum(),
            output: self.output.sum(),
            answer: self.answer.sum(),
            cache: self.cache,
        };
        scalars.write(&mut s, opts);
        let (kernel, read) = self.clock;
        s.values.insert(
            "kernel_clock_ratio".into(),
            (read > 0).then(|| kernel as f64 / read as f64),
        );
        answer_metrics(&self.answers, &mut s);
        s.client_bound = client_bound(&s, opts);
        s
    }
}

/// `answers_checked`, `answers_ok_ratio`, `answers_unparsed_ratio` from the golden
/// requests' checks (by `AnswerCheck::ALL`): null ratios when the run had none.
fn answer_metrics(answers: &[u64; 4], s: &mut RunSummary) {
    let [ok, _wrong, unparsed, _failed] = *answers;
    let checked: u64 = answers.iter().sum();
    let ratio = |n: u64| (checked > 0).then(|| n as f64 / checked as f64);
    for (k, value) in [
        ("answers_checked", Some(checked as f64)),
        ("answers_ok_ratio", ratio(ok)),
        ("answers_unparsed_ratio", ratio(unparsed)),
    ] {
        s.values.insert(k.to_string(), value);
    }
}

/// What the run's scalar metrics are made of.
struct Scalars {
    ok: f64,
    good: f64,
    good_output: f64,
    busy_s: f64,
    requests: f64,
    /// Measured requests the client cancelled (the plan's `cancel`, a stop, Ctrl-C): not
    /// the server's failures, and out of the ratios' denominators.
    cancelled: f64,
    duration_s: Option<f64>,
    input: Option<f64>,
    output: Option<f64>,
    answer: Option<f64>,
    cache: (u64, u64),
}

impl Scalars {
    fn write(&self, s: &mut RunSummary, opts: &SummaryOptions) {
        let d = self.duration_s;
        let per_s = |x: Option<f64>| d.filter(|d| *d > 0.0).zip(x).map(|(d, x)| x / d);
        let (cached, prompt) = self.cache;
        let wall = opts.client_wall_s.or(d).filter(|w| *w > 0.0);
        let inputs = opts.inputs_per_request.map(|k| self.ok * f64::from(k));
        let no_output = s.no_output as f64;
        let total = self.input.zip(self.output).map(|(a, b)| a + b);
        let good_output = self.output.map(|_| self.good_output);
        let in_flight_mean = per_s(Some(self.busy_s));
        // The requests the server was left to answer: every measured one the client did
        // not cancel.
        let attempted = self.requests - self.cancelled;
        let throughput = Throughput {
            duration_s: d,
            output_tokens: self.output,
            total_tokens: total,
            good_output_tokens: good_output,
            in_flight_mean,
        };
        let users = opts.users.map(f64::from);
        let capacity = capacity(&throughput, users, opts.hardware.as_ref());
        for (k, value) in [
            ("requests_ok", Some(self.ok)),
            ("requests_no_output", Some(no_output)),
            (
                "requests_failed",
                Some(self.requests - self.ok - self.cancelled),
            ),
            (
                "success_ratio",
                (attempted > 0.0).then(|| self.ok / attempted),
            ),
            ("cancelled_requests", Some(self.cancelled)),
            (
                "cancelled_ratio",
                (self.requests > 0.0).then(|| self.cancelled / self.requests),
            ),
            ("duration_s", d),
            ("rps", per_s(Some(self.ok))),
            ("output_tps", per_s(self.output)),
            ("answer_tps", per_s(self.answer)),
            ("input_tps", per_s(self.input)),
            ("total_tps", per_s(total)),
            ("goodput_rps", per_s(Some(self.good))),
            ("good_requests", Some(self.good)),
            (
                "slo_attainment",
                (attempted > 0.0).then(|| self.good / attempted),
            ),
            ("goodput_tokens_per_s", per_s(good_output)),
            ("in_flight_mean", in_flight_mean),
            ("inputs_per_s", per_s(inputs)),
            (
                "cache_hit_ratio",
                (prompt > 0).then(|| cached as f64 / prompt as f64),
            ),
            ("server_cache_hit_ratio", opts.server_cache_hit_ratio),
            ("planned_prefix_share", opts.planned_prefix_share),
            ("planned_template_share", opts.planned_template_share),
            (
                "client_cpu_ratio",
                opts.client_cpu_s.zip(wall).map(|(c, w)| c / w),
            ),
            (
                "client_wait_ratio",
                opts.client_wait_s.zip(wall).map(|(c, w)| c / w),
            ),
        ]
        .into_iter()
        .chain(capacity)
        {
            s.values.insert(k.to_string(), value);
        }
    }
}
