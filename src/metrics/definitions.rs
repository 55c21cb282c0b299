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
//! vLLM/EvalScope ITL lists are rebuilt from those (a choice chunk without content in the
//! middle of a stream, which neither the simulator nor vLLM sends, is not kept).
//! TPOT is (latency − TTFT) / (output tokens − 1) under every rule set.
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
}

/// One request's timings under a rule set.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub ttft: Option<Duration>,
    pub latency: Duration,
    /// Gaps between consecutive chunks.
    pub itl: Vec<Duration>,
}

impl Timing {
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

/// The timings of `r` under `defs`.
pub fn timing(r: &RequestRecord, defs: MetricDefinitions) -> Timing {
    let since = |t: Duration| t.saturating_sub(r.started());
    match defs {
        MetricDefinitions::Perfplan => Timing {
            ttft: r.ttft(),
            latency: r.latency(),
            itl: gaps(&r.content_times),
        },
        MetricDefinitions::Vllm => Timing {
            ttft: r.first_chunk.map(since),
            latency: since(r.last_chunk.unwrap_or(r.end)),
            itl: gaps(&choice_times(r)),
        },
        MetricDefinitions::Evalscope => {
            let latency = since(r.end);
            Timing {
                ttft: Some(r.first_chunk.map_or(latency, since)),
                latency,
                itl: gaps(&choice_times(r)),
            }
        }
    }
}
