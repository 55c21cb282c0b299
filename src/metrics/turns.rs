//! Per-turn metrics of a multi-turn run: TTFT of first and later turns, and the cache hit
//! ratio of later turns, from samples of the measured successful turns (the same fold for
//! a live run and a merge). A tool-calling run (`kind = "tool_calls"`) adds its tool
//! metrics from each request's tally: tool calls per user turn, the share of calls that
//! parsed, and TTFT of the requests that open a turn (round 0) apart from those that
//! answer tool results (rounds 1 and later).

use crate::record::{Outcome, Phase, RequestRecord, ToolTally};

/// What the per-turn metrics read of one measured successful turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TurnSample {
    pub item: u64,
    /// TTFT in milliseconds.
    pub ttft_ms: Option<f64>,
    /// (cached, prompt) tokens from usage.
    pub cache: Option<(u32, u32)>,
    /// A tool-calling run's request: its round and its calls' parse tally.
    pub tools: Option<ToolTally>,
}

impl TurnSample {
    /// The sample of `r` when it is a measured successful turn.
    pub fn of(r: &RequestRecord) -> Option<TurnSample> {
        (r.phase == Phase::Measured && r.outcome == Outcome::Ok).then(|| TurnSample {
            item: r.item,
            ttft_ms: r.ttft().map(|d| d.as_secs_f64() * 1e3),
            cache: r.usage.cached_tokens.zip(r.usage.prompt_tokens),
            tools: r.tools,
        })
    }
}

/// `turn_metrics` of the samples a run folded.
pub(crate) fn turn_metrics_of(
    samples: &[TurnSample],
    turn_of_item: &[u32],
) -> Vec<(&'static str, Option<f64>)> {
    let mut first = Vec::new();
    let mut later = Vec::new();
    let (mut cached, mut prompt) = (0u64, 0u64);
    for r in samples {
        let turn = turn_of_item.get(r.item as usize).copied().unwrap_or(0);
        if turn == 0 {
            first.extend(r.ttft_ms);
        } else {
            later.extend(r.ttft_ms);
            if let Some((c, p)) = r.cache {
                cached += u64::from(c);
                prompt += u64::from(p);
            }
        }
    }
    let mut out = vec![
        ("ttft_first_turn_mean", mean(&first)),
        ("ttft_later_turns_mean", mean(&later)),
        (
            "cache_hit_ratio_later_turns",
            (prompt > 0).then(|| cached as f64 / prompt as f64),
        ),
    ];
    if samples.iter().any(|s| s.tools.is_some()) {
        out.extend(tool_metrics(samples));
    }
    out
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The tool metrics of a tool-calling run's samples (those with a tally).
fn tool_metrics(samples: &[TurnSample]) -> Vec<(&'static str, Option<f64>)> {
    let (mut turns, mut calls, mut parsed) = (0u64, 0u64, 0u64);
    let (mut user, mut tool) = (Vec::new(), Vec::new());
    for (t, s) in samples.iter().filter_map(|s| s.tools.map(|t| (t, s))) {
        calls += u64::from(t.calls);
        parsed += u64::from(t.parsed);
        if t.round == 0 {
            turns += 1;
            user.extend(s.ttft_ms);
        } else {
            tool.extend(s.ttft_ms);
        }
    }
    tool.sort_by(f64::total_cmp);
    vec![
        (
            "tool_calls_per_turn",
            (turns > 0).then(|| calls as f64 / turns as f64),
        ),
        (
            "tool_call_parse_ok_ratio",
            (calls > 0).then(|| parsed as f64 / calls as f64),
        ),
        ("tool_calls_unparsed", Some((calls - parsed) as f64)),
        ("ttft_user_round_mean", mean(&user)),
        ("ttft_tool_round_mean", mean(&tool)),
        ("ttft_tool_round_p99", super::stats::percentile(&tool, 99.0)),
    ]
}
