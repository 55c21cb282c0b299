//! What a run's records say about whether its numbers can be trusted, folded one record
//! at a time (the live run's writer folds it beside the metrics): requests whose usage
//! disagrees with what the client received, answers that arrived in one burst or as a
//! whole body to a streamed request, and values that cannot be. Counters only, so the
//! evidence of shards adds up exactly in a merge. Knows records, not runs or plans.

use std::time::Duration;

use super::thresholds::Thresholds;
pub use crate::record::facts::{Evidence, Example};
use crate::record::{Outcome, Phase, RequestRecord};

impl Evidence {
    /// The evidence of two parts of one run (shards), added.
    pub fn add(&mut self, other: &Evidence) {
        self.output_checked += other.output_checked;
        self.output_mismatched += other.output_mismatched;
        self.streams_checked += other.streams_checked;
        self.bursts += other.bursts;
        self.unstreamed += other.unstreamed;
        self.impossible += other.impossible;
        let first = |a: &mut Option<Example>, b: &Option<Example>| {
            if a.is_none() {
                a.clone_from(b);
            }
        };
        first(&mut self.output_example, &other.output_example);
        first(&mut self.burst_example, &other.burst_example);
        first(&mut self.impossible_example, &other.impossible_example);
    }
}

/// The fold: evidence built record by record under the run's thresholds.
#[derive(Debug, Clone)]
pub struct EvidenceFold {
    rules: Thresholds,
    evidence: Evidence,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Why a record's times cannot be, if they cannot.
fn impossible(r: &RequestRecord) -> Option<String> {
    let before_sent = |t: Duration| t < r.sent;
    if r.end < r.sent {
        return Some(format!(
            "ended {:.3} ms before it was sent",
            ms(r.sent - r.end)
        ));
    }
    if r.content_times.iter().copied().any(before_sent) || r.first_chunk.is_some_and(before_sent) {
        return Some("a chunk arrived before the request was sent".into());
    }
    if r.content_times.windows(2).any(|w| w[1] < w[0]) {
        return Some("chunk times out of order".into());
    }
    let last = r.content_times.last().copied().or(r.last_chunk);
    if last.is_some_and(|t| t > r.end) {
        return Some("a chunk arrived after the response ended".into());
    }
    None
}

impl EvidenceFold {
    pub fn new(rules: &Thresholds) -> EvidenceFold {
        EvidenceFold {
            rules: rules.clone(),
            evidence: Evidence::default(),
        }
    }

    /// Adds one record (only measured ones count).
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase != Phase::Measured || r.outcome == Outcome::Cancelled {
            return;
        }
        let e = &mut self.evidence;
        if let Some(why) = impossible(r) {
            e.impossible += 1;
            e.impossible_example.get_or_insert(Example {
                request: r.index,
                seen: why,
            });
        }
        if r.outcome != Outcome::Ok {
            return;
        }
        if r.unstreamed {
            e.unstreamed += 1;
        }
        self.check_output(r);
        self.check_burst(r);
    }

    /// The server's output count against the client's own: both ways when the client
    /// counted the text, only "fewer than the chunks" when it counted chunks alone (a
    /// chunk may carry several tokens) or when the answer was tool calls.
    fn check_output(&mut self, r: &RequestRecord) {
        let (Some(usage), Some(received)) = (r.usage.completion_tokens, r.received_output_tokens())
        else {
            return;
        };
        let (usage, received) = (u64::from(usage), u64::from(received));
        let e = &mut self.evidence;
        e.output_checked += 1;
        // An answer with tool calls shows the client each call's name and arguments, not
        // the markup the server generated around them (which vLLM's usage counts): only
        // fewer tokens than the client received is a disagreement there.
        let tool_answer = r.tools.is_some_and(|t| t.calls > 0);
        let agree = if r.client_output_tokens.is_some() && !tool_answer {
            self.rules.tokens_agree(received, usage, 1)
        } else {
            usage >= received || self.rules.tokens_agree(received, usage, 1)
        };
        if !agree {
            e.output_mismatched += 1;
            e.output_example.get_or_insert(Example {
                request: r.index,
                seen: format!("usage says {usage} output tokens, the client received {received}"),
            });
        }
    }

    /// A streamed answer whose tokens after the first arrived faster than one per
    /// `burst_token_gap_ms`: buffered somewhere, not streamed.
    fn check_burst(&mut self, r: &RequestRecord) {
        // What arrived: the client's own count where it has one (a server's usage may
        // overstate it, which is another reason's business).
        let Some(tokens) = r
            .received_output_tokens()
            .filter(|&n| n > 1 || r.usage.completion_tokens.is_none())
            .or(r.usage.completion_tokens)
        else {
            return;
        };
        let (Some(first), Some(last)) = (r.content_times.first(), r.content_times.last()) else {
            return;
        };
        if tokens < self.rules.burst_min_tokens.max(2) {
            return;
        }
        let e = &mut self.evidence;
        e.streams_checked += 1;
        let per_token = ms(last.saturating_sub(*first)) / f64::from(tokens - 1);
        if per_token < self.rules.burst_token_gap_ms {
            e.bursts += 1;
            e.burst_example.get_or_insert(Example {
                request: r.index,
                seen: format!(
                    "{tokens} tokens in {} chunk(s) within {:.3} ms, {:.1} ms after it was sent",
                    r.content_times.len(),
                    ms(last.saturating_sub(*first)),
                    ms(first.saturating_sub(r.sent))
                ),
            });
        }
    }

    pub fn finish(self) -> Evidence {
        self.evidence
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Usage;

    /// A streamed answer of these content chunks (one token each, as counted), its
    /// usage and the client tokenizer's count.
    fn rec(usage: Option<u32>, client: Option<u32>, chunks_ms: &[u64]) -> RequestRecord {
        let n = u32::try_from(chunks_ms.len()).unwrap_or(u32::MAX);
        RequestRecord {
            stream_tokens: Some(crate::record::StreamTokens {
                choice_chunks: n,
                at_content: (1..=n).collect(),
                total: n,
                source: crate::record::TokenSource::Chunks,
            }),
            sent: Duration::ZERO,
            content_times: chunks_ms
                .iter()
                .map(|&m| Duration::from_millis(m))
                .collect(),
            end: Duration::from_millis(chunks_ms.last().copied().unwrap_or(0) + 1),
            usage: Usage {
                completion_tokens: usage,
                ..Usage::default()
            },
            client_output_tokens: client,
            finish_reason: Some("length".into()),
            ..RequestRecord::default()
        }
    }

    fn fold(records: &[RequestRecord]) -> Evidence {
        let mut f = EvidenceFold::new(&Thresholds::default());
        records.iter().for_each(|r| f.add(r));
        f.finish()
    }

    #[test]
    fn usage_far_from_what_arrived_is_a_mismatch() {
        let steps: Vec<u64> = (1..=8).map(|i| i * 10).collect();
        let e = fold(&[
            rec(Some(800), Some(8), &steps),
            rec(Some(8), Some(8), &steps),
            // No tokenizer: only fewer than the chunks is wrong.
            rec(Some(800), None, &steps),
            rec(Some(3), None, &steps),
        ]);
        assert_eq!((e.output_checked, e.output_mismatched), (4, 2));
        let ex = e.output_example.unwrap_or_else(|| Example {
            request: 9,
            seen: String::new(),
        });
        assert_eq!(
            ex.seen,
            "usage says 800 output tokens, the client received 8"
        );
    }

    #[test]
    fn a_tool_call_answer_may_have_generated_more_than_the_client_saw() {
        let steps: Vec<u64> = (1..=8).map(|i| i * 10).collect();
        let tools = |mut r: RequestRecord, calls| {
            r.tools = Some(crate::record::ToolTally {
                round: 0,
                calls,
                parsed: calls,
            });
            r
        };
        let e = fold(&[
            // vLLM counts the tool-call markup its parser strips: more is fine, fewer not.
            tools(rec(Some(30), Some(8), &steps), 1),
            tools(rec(Some(3), Some(8), &steps), 1),
            // A tool-calling run's answer without calls is checked both ways.
            tools(rec(Some(30), Some(8), &steps), 0),
        ]);
        assert_eq!((e.output_checked, e.output_mismatched), (3, 2));
    }

    #[test]
    fn a_burst_is_every_token_at_once() {
        let e = fold(&[
            rec(Some(8), Some(8), &[300; 8]),
            rec(Some(8), None, &[300]),
            rec(Some(8), Some(8), &[10, 20, 30, 40, 50, 60, 70, 80]),
            rec(Some(2), Some(2), &[300, 300]),
        ]);
        assert_eq!((e.streams_checked, e.bursts), (3, 2));
    }

    #[test]
    fn times_out_of_order_are_impossible() {
        let mut r = rec(Some(3), None, &[10, 5, 20]);
        let e = fold(std::slice::from_ref(&r));
        assert_eq!(e.impossible, 1);
        r.content_times.sort();
        r.sent = Duration::from_millis(30);
        r.end = Duration::from_millis(40);
        assert_eq!(fold(&[r]).impossible, 1);
        let mut sum = fold(&[rec(Some(8), Some(8), &[300; 8])]);
        let steps: Vec<u64> = (1..=8).map(|i| i * 5).collect();
        sum.add(&fold(&[rec(Some(800), Some(8), &steps)]));
        assert_eq!((sum.bursts, sum.output_mismatched), (1, 1));
    }
}
