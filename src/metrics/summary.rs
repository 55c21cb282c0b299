//! `summarize`: one run's records → every metric of the vocabulary, failure classes,
//! estimated/truncated counts, goodput and client health. Only measured requests count;
//! distributions of timings and tokens use successful requests only.

use std::collections::BTreeMap;

use super::definitions::{timing, MetricDefinitions};
use super::names::all_names;
use super::stats::fill;
use crate::record::{Outcome, Phase, RequestRecord};

/// What an SLO bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SloQuantity {
    Ttft,
    /// The request's TPOT (met when it has one output token).
    Tpot,
    /// Every gap of the request (met when it has none).
    Itl,
    Latency,
}

impl SloQuantity {
    pub fn parse(text: &str) -> Option<SloQuantity> {
        match text {
            "ttft" => Some(SloQuantity::Ttft),
            "tpot" => Some(SloQuantity::Tpot),
            "itl" => Some(SloQuantity::Itl),
            "latency" => Some(SloQuantity::Latency),
            _ => None,
        }
    }
}

/// One service-level objective: `quantity <= max_ms` for a request to count in goodput.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    pub quantity: SloQuantity,
    pub max_ms: f64,
}

/// Settings of a summary that the records do not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryOptions {
    pub definitions: MetricDefinitions,
    pub slos: Vec<Slo>,
    /// Client CPU seconds during the run (`RunOutput::client_cpu`).
    pub client_cpu_s: Option<f64>,
    /// Wall seconds the CPU figure covers (`RunOutput::wall`); default: the run's duration.
    pub client_wall_s: Option<f64>,
    /// Cores the client can use; default 1 (the engine drives all requests from one task).
    /// Count the simulator's too when it runs in-process.
    pub cpu_cores: Option<f64>,
    /// From the server's `/metrics` before/after the run (the runner's job).
    pub server_cache_hit_ratio: Option<f64>,
    /// The run's planned shared-prefix share (`prefix_tokens / input_tokens`), reported
    /// beside the measured hit ratios, never in their place.
    pub planned_prefix_share: Option<f64>,
    /// Inputs per request (embeddings batch size, rerank documents) for `inputs_per_s`.
    pub inputs_per_request: Option<u32>,
    /// Send lateness p99 above this flags the run `client_bound`.
    pub lateness_limit_ms: f64,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            definitions: MetricDefinitions::Perfplan,
            slos: Vec::new(),
            client_cpu_s: None,
            client_wall_s: None,
            cpu_cores: None,
            server_cache_hit_ratio: None,
            planned_prefix_share: None,
            inputs_per_request: None,
            lateness_limit_ms: 5.0,
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
    /// Requests sent but not measured.
    pub unmeasured: u64,
    pub client_bound: Option<String>,
    pub definitions: MetricDefinitions,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
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

/// Computes every metric from `records` (all of a run's records; warmup is skipped here).
pub fn summarize(records: &[RequestRecord], opts: &SummaryOptions) -> RunSummary {
    let measured: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .collect();
    let ok: Vec<&RequestRecord> = measured
        .iter()
        .copied()
        .filter(|r| r.outcome == Outcome::Ok)
        .collect();
    let mut s = RunSummary {
        values: all_names().into_iter().map(|n| (n, None)).collect(),
        requests: measured.len() as u64,
        failures: BTreeMap::new(),
        http_statuses: BTreeMap::new(),
        estimated_input: 0,
        estimated_output: 0,
        unknown_output: 0,
        truncated: ok.iter().filter(|r| is_truncated(r)).count() as u64,
        no_output: ok.iter().filter(|r| r.no_output()).count() as u64,
        unmeasured: (records.len() - measured.len()) as u64,
        client_bound: None,
        definitions: opts.definitions,
    };
    for r in measured.iter().filter(|r| r.outcome != Outcome::Ok) {
        *s.failures
            .entry(r.outcome.as_str().to_string())
            .or_default() += 1;
        if let Some(status) = r.http_status.filter(|_| r.outcome == Outcome::Http) {
            *s.http_statuses.entry(status).or_default() += 1;
        }
    }
    let duration_s = run_duration(&measured);
    let goodput = distributions(&mut s, &ok, opts);
    let set = |s: &mut RunSummary, k: &str, v: Option<f64>| {
        s.values.insert(k.to_string(), v);
    };
    let n_ok = ok.len() as f64;
    set(&mut s, "requests_ok", Some(n_ok));
    let no_output = s.no_output as f64;
    set(&mut s, "requests_no_output", Some(no_output));
    set(
        &mut s,
        "requests_failed",
        Some((measured.len() - ok.len()) as f64),
    );
    let ratio = (!measured.is_empty()).then(|| n_ok / measured.len() as f64);
    set(&mut s, "success_ratio", ratio);
    set(&mut s, "duration_s", duration_s);
    let per_s = |x: Option<f64>| duration_s.filter(|d| *d > 0.0).zip(x).map(|(d, x)| x / d);
    let input: Option<f64> = sum_tokens(&ok, RequestRecord::input_tokens);
    let output: Option<f64> = sum_tokens(&ok, RequestRecord::output_tokens);
    set(&mut s, "rps", per_s(Some(n_ok)));
    set(&mut s, "output_tps", per_s(output));
    set(&mut s, "input_tps", per_s(input));
    set(
        &mut s,
        "total_tps",
        per_s(input.zip(output).map(|(a, b)| a + b)),
    );
    set(&mut s, "goodput_rps", per_s(Some(goodput as f64)));
    let inputs = opts.inputs_per_request.map(|k| n_ok * f64::from(k));
    set(&mut s, "inputs_per_s", per_s(inputs));
    set(&mut s, "cache_hit_ratio", cache_hit_ratio(&ok));
    set(
        &mut s,
        "server_cache_hit_ratio",
        opts.server_cache_hit_ratio,
    );
    set(&mut s, "planned_prefix_share", opts.planned_prefix_share);
    let wall = opts.client_wall_s.or(duration_s).filter(|w| *w > 0.0);
    let cpu_ratio = opts.client_cpu_s.zip(wall).map(|(c, w)| c / w);
    set(&mut s, "client_cpu_ratio", cpu_ratio);
    fill(&mut s.values, "lateness", lateness_values(records));
    fill(&mut s.values, "connect", connect_values(&measured));
    s.client_bound = client_bound(&s, opts);
    s
}

/// First measured request sent → last measured response finished, in seconds.
fn run_duration(measured: &[&RequestRecord]) -> Option<f64> {
    let start = measured.iter().map(|r| r.sent).min()?;
    let end = measured.iter().map(|r| r.end).max()?;
    Some(end.saturating_sub(start).as_secs_f64())
}

fn sum_tokens(ok: &[&RequestRecord], f: fn(&RequestRecord) -> Option<(u32, bool)>) -> Option<f64> {
    let counts: Vec<u32> = ok.iter().filter_map(|r| f(r).map(|(n, _)| n)).collect();
    (!counts.is_empty()).then(|| counts.iter().map(|&n| f64::from(n)).sum())
}

fn cache_hit_ratio(ok: &[&RequestRecord]) -> Option<f64> {
    let (mut cached, mut prompt) = (0u64, 0u64);
    for r in ok {
        if let (Some(c), Some(p)) = (r.usage.cached_tokens, r.usage.prompt_tokens) {
            cached += u64::from(c);
            prompt += u64::from(p);
        }
    }
    (prompt > 0).then(|| cached as f64 / prompt as f64)
}

/// Fills the distributions; returns how many requests met every SLO.
fn distributions(s: &mut RunSummary, ok: &[&RequestRecord], opts: &SummaryOptions) -> u64 {
    let (mut ttft, mut tpot, mut itl, mut lat) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut ttfo = Vec::new();
    let (mut input, mut output, mut cached) = (Vec::new(), Vec::new(), Vec::new());
    let mut good = 0;
    for r in ok {
        let t = timing(r, opts.definitions);
        let out = r.output_tokens();
        let tp = out.and_then(|(n, _)| t.tpot(n));
        match out {
            Some((n, est)) => {
                output.push(f64::from(n));
                s.estimated_output += u64::from(est);
            }
            None => s.unknown_output += 1,
        }
        if let Some((n, est)) = r.input_tokens() {
            input.push(f64::from(n));
            s.estimated_input += u64::from(est);
        }
        if let Some(c) = r.usage.cached_tokens {
            cached.push(f64::from(c));
        }
        if meets(&t, tp, &opts.slos) {
            good += 1;
        }
        ttft.extend(t.ttft.map(ms));
        ttfo.extend(r.ttfo().map(ms));
        tpot.extend(tp.map(ms));
        lat.push(ms(t.latency));
        itl.extend(t.itl.iter().map(|d| ms(*d)));
    }
    fill(&mut s.values, "ttft", ttft);
    fill(&mut s.values, "ttfo", ttfo);
    fill(&mut s.values, "tpot", tpot);
    fill(&mut s.values, "itl", itl);
    fill(&mut s.values, "latency", lat);
    fill(&mut s.values, "input_tokens", input);
    fill(&mut s.values, "output_tokens", output);
    fill(&mut s.values, "cached_tokens", cached);
    good
}

fn meets(t: &super::definitions::Timing, tpot: Option<std::time::Duration>, slos: &[Slo]) -> bool {
    slos.iter().all(|slo| match slo.quantity {
        SloQuantity::Ttft => t.ttft.is_some_and(|x| ms(x) <= slo.max_ms),
        SloQuantity::Tpot => tpot.is_none_or(|x| ms(x) <= slo.max_ms),
        SloQuantity::Itl => t.itl.iter().all(|x| ms(*x) <= slo.max_ms),
        SloQuantity::Latency => ms(t.latency) <= slo.max_ms,
    })
}

/// Lateness is over every measured request sent (failed ones too).
fn lateness_values(records: &[RequestRecord]) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .map(|r| ms(r.lateness()))
        .collect()
}

/// Connection setup of every measured request that opened a connection (failed ones too:
/// the connection was made).
fn connect_values(measured: &[&RequestRecord]) -> Vec<f64> {
    measured.iter().filter_map(|r| r.connect).map(ms).collect()
}

fn client_bound(s: &RunSummary, opts: &SummaryOptions) -> Option<String> {
    let mut reasons = Vec::new();
    if let Some(p99) = s.values.get("lateness_p99").copied().flatten() {
        if p99 > opts.lateness_limit_ms {
            reasons.push(format!(
                "send lateness p99 {p99:.1} ms exceeds {:.1} ms: the client could not send on time",
                opts.lateness_limit_ms
            ));
        }
    }
    // The engine drives every request from one task: one core is its ceiling.
    let cores = opts.cpu_cores.unwrap_or(1.0);
    if let Some(ratio) = s.values.get("client_cpu_ratio").copied().flatten() {
        if ratio >= 0.9 * cores {
            reasons.push(format!(
                "client used {ratio:.2} of {cores} CPU cores: the client was saturated"
            ));
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}
