//! The client's own count of a response's output tokens, held against the server's
//! usage; the suite's writer calls it on each record, off the timing path.

use crate::record::RequestRecord;
use crate::tokenize::Tokenizer;

/// The client's own count of a request's output tokens: its reasoning and its answer,
/// each by the model's tokenizer (whatever the server's usage says, so that the two can
/// be held against each other; the metrics use it only where usage is missing). Text
/// beyond the endpoint's `limits.max_text` was counted in bytes but not kept: the kept
/// text's tokens are scaled by all output bytes over the kept bytes. Without a
/// tokenizer only an absent reasoning is known (0 tokens). A stream whose chunks (or
/// per-chunk usage) already account for exactly the server's usage, with no reasoning,
/// is not tokenized again: nothing is left to hold against usage, and a fast server's
/// writer is spared the work.
pub fn count_output(record: &mut RequestRecord, tokenizer: Option<&Tokenizer>) {
    let accounted = record.stream_tokens.as_ref().map(|s| s.total);
    let consistent = record.usage.completion_tokens.is_some()
        && record.usage.completion_tokens == accounted
        && record.reasoning_text.is_empty();
    if consistent {
        record.client_reasoning_tokens = Some(0);
        return;
    }
    if record.output_bytes.is_none() {
        return;
    }
    if record.reasoning_text.is_empty() {
        record.client_reasoning_tokens = Some(0);
    }
    let Some(t) = tokenizer else {
        return;
    };
    let kept = (record.output_text.len() + record.reasoning_text.len()) as u64;
    if kept == 0 {
        let nothing = record.output_bytes == Some(0);
        record.client_output_tokens = nothing.then_some(0);
        return;
    }
    let all = record.output_bytes.unwrap_or(kept).max(kept);
    let scaled = |text: &str| -> Option<u32> {
        if text.is_empty() {
            return Some(0);
        }
        let n = t.count(text, false).ok()? as u64;
        u32::try_from((n * all).div_ceil(kept)).ok()
    };
    let reasoning = scaled(&record.reasoning_text);
    let answer = scaled(&record.output_text);
    record.client_reasoning_tokens = reasoning;
    record.client_output_tokens = reasoning.zip(answer).map(|(r, a)| r.saturating_add(a));
}
