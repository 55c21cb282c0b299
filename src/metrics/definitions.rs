//! Per-request timings under three rule sets, computed from the same record:
//!
//! - `perfplan` (default, strictest): TTFT at the first chunk with non-empty content;
//!   latency ends at the last content chunk (the trailing usage chunk and `[DONE]` do not
//!   count); ITL are the gaps between content chunks.
//! - `vllm` (`vllm bench serve`): TTFT at the first chunk carrying any choice (the role
//!   chunk counts); latency ends at the last chunk carrying a choice (the finish chunk
//!   counts, the usage chunk does not); ITL are gaps between choice chunks.
//! - `evalscope` (EvalScope perf): TTFT at the first data event; latency ends when the
//!   stream is over (after the usage chunk and `[DONE]`); ITL are gaps between data
//!   events. Non-streamed requests: TTFT equals latency.
//!
//! The record keeps the first and last choice chunk and every content chunk, so the
//! vLLM/EvalScope gap lists are rebuilt from those (a choice chunk without content in the
//! middle of a stream, which vLLM sends for a special token under `ignore_eos`, is not
//! timed; its token is counted in the next content chunk's, see `record::StreamTokens`).
//! TPOT is (latency − TTFT) / (output tokens − 1) under every rule set.
//!
//! Chunks are not tokens: `gaps` are the gaps between chunks as observed (the
//! `chunk_gap_*` metrics), and `itl` the inter-token latency, each gap spread evenly over
//! the tokens that arrived in it (a gap carrying k tokens is k samples of gap / k; see
//! `Timing::per_token`). Under perfplan's definitions the tokens of each gap are the
//! stream's counts (the server's per-chunk usage, else one per chunk with a token);
//! with one token per chunk, and under the vLLM and EvalScope definitions (which count
//! every chunk as one token, as those tools do), the two are the same figures.
//!
//! Where the clocks start: perfplan's TTFT and latency start when the request is handed
//! to an established connection (`sent`); a connection the request had to open first is
//! timed on its own (`connect`). vLLM's and EvalScope's timers start before their HTTP
//! client opens a connection, so under their definitions TTFT and latency start at
//! `RequestRecord::started` (`sent − connect`), connection setup included.

use std::time::Duration;

use crate::record::RequestRecord;

/// Which tool's rules the timings follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricDefinitions {
    #[default]
    Perfplan,
    Evalscope,
    Vllm,
}

impl MetricDefinitions {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricDefinitions::Perfplan => "perfplan",
            MetricDefinitions::Evalscope => "evalscope",
            MetricDefinitions::Vllm => "vllm",
        }
    }

    pub fn parse(text: &str) -> Option<MetricDefinitions> {
        [
            MetricDefinitions::Perfplan,
            MetricDefinitions::Evalscope,
            MetricDefinitions::Vllm,
        ]
        .into_iter()
        .find(|d| d.as_str() == text)
    }

    /// A stored run's definitions: `metric_definitions` in its facts (the run summary
    /// writes it), perfplan's where it is missing or unknown.
    pub fn of_facts(facts: &crate::record::RunFacts) -> MetricDefinitions {
        facts
            .metric_definitions
            .as_deref()
            .and_then(MetricDefinitions::parse)
            .unwrap_or_default()
    }
}

/// One request's timings under a rule set.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub ttft: Option<Duration>,
    pub latency: Duration,
    /// Gaps between consecutive chunks, as observed.
    pub gaps: Vec<Duration>,
    /// The output tokens each gap brought (its later chunk's tokens); empty when every
    /// gap brought one.
    pub gap_tokens: Vec<u32>,
}

impl Timing {
    /// The per-token inter-token latencies: `(gap / k, k)` for each gap that brought
    /// `k` tokens, meaning k samples of gap / k. A gap that brought none (a chunk whose
    /// running count did not move) is carried into the next one, so the samples always
    /// add up to the gaps' time.
    pub(crate) fn per_token(&self) -> impl Iterator<Item = (Duration, u32)> + '_ {
        let mut carried = Duration::ZERO;
        self.gaps.iter().enumerate().filter_map(move |(i, gap)| {
            let k = self.gap_tokens.get(i).copied().unwrap_or(1);
            let time = carried + *gap;
            if k == 0 {
                carried = time;
                return None;
            }
            carried = Duration::ZERO;
            Some((time / k, k))
        })
    }

    /// (latency − TTFT) / (output_tokens − 1); `None` for one token or no TTFT.
    pub fn tpot(&self, output_tokens: u32) -> Option<Duration> {
        if output_tokens < 2 {
            return None;
        }
        let decode = self.latency.checked_sub(self.ttft?)?;
        Some(decode / (output_tokens - 1))
    }
}

fn gaps(times: &[Duration]) -> Vec<Duration> {
    times
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect()
}

/// Choice-chunk times rebuilt from the record: first choice, content chunks, last choice.
fn choice_times(r: &RequestRecord) -> Vec<Duration> {
    let mut t = Vec::with_capacity(r.content_times.len() + 2);
    let extra = [r.first_chunk, r.last_chunk];
    for x in extra[0]
        .iter()
        .chain(&r.content_times)
        .chain(extra[1].iter())
    {
        if t.last().is_none_or(|last| x > last) {
            t.push(*x);
        }
    }
    t
}

/// The tokens each gap between content chunks brought, from the stream's counts (empty
/// when unknown, a row written before them, or when every gap brought one).
fn content_gap_tokens(r: &RequestRecord) -> Vec<u32> {
    let Some(s) = r.stream_tokens.as_ref() else {
        return Vec::new();
    };
    if s.at_content.len() != r.content_times.len() {
        return Vec::new();
    }
    let per: Vec<u32> = s.per_content().skip(1).collect();
    match per.iter().all(|&k| k == 1) {
        true => Vec::new(),
        false => per,
    }
}

/// The timings of `r` under `defs`.
pub fn timing(r: &RequestRecord, defs: MetricDefinitions) -> Timing {
    let since = |t: Duration| t.saturating_sub(r.started());
    match defs {
        MetricDefinitions::Perfplan => Timing {
            ttft: r.ttft(),
            latency: r.latency(),
            gaps: gaps(&r.content_times),
            gap_tokens: content_gap_tokens(r),
        },
        MetricDefinitions::Vllm => Timing {
            ttft: r.first_chunk.map(since),
            latency: since(r.last_chunk.unwrap_or(r.end)),
            gaps: gaps(&choice_times(r)),
            gap_tokens: Vec::new(),
        },
        MetricDefinitions::Evalscope => {
            let latency = since(r.end);
            Timing {
                ttft: Some(r.first_chunk.map_or(latency, since)),
                latency,
                gaps: gaps(&choice_times(r)),
                gap_tokens: Vec::new(),
            }
        }
    }
}
