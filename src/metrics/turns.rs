//! Per-turn metrics of a multi-turn run: TTFT of first and later turns, and the cache hit
//! ratio of later turns, from samples of the measured successful turns (the same fold for
//! a live run and a merge).

use crate::record::{Outcome, Phase, RequestRecord};

/// What the per-turn metrics read of one measured successful turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnSample {
    pub item: u64,
    /// TTFT in milliseconds.
    pub ttft_ms: Option<f64>,
    /// (cached, prompt) tokens from usage.
    pub cache: Option<(u32, u32)>,
}

impl TurnSample {
    /// The sample of `r` when it is a measured successful turn.
    pub fn of(r: &RequestRecord) -> Option<TurnSample> {
        (r.phase == Phase::Measured && r.outcome == Outcome::Ok).then(|| TurnSample {
            item: r.item,
            ttft_ms: r.ttft().map(|d| d.as_secs_f64() * 1e3),
            cache: r.usage.cached_tokens.zip(r.usage.prompt_tokens),
        })
    }
}

/// `turn_metrics` of the samples a run folded.
pub fn turn_metrics_of(
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
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    vec![
        ("ttft_first_turn_mean", mean(&first)),
        ("ttft_later_turns_mean", mean(&later)),
        (
            "cache_hit_ratio_later_turns",
            (prompt > 0).then(|| cached as f64 / prompt as f64),
        ),
    ]
}
