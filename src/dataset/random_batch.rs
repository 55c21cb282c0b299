//! `random_embedding` and `random_rerank`: random texts, each exactly its target length as an
//! embeddings or rerank server counts one input (encoded with the tokenizer's special tokens).
//! An embeddings request holds `batch_size` inputs of `input_tokens` each; a rerank request a
//! query of `query_tokens` (fixed, or drawn per request from `{min, max}`) and
//! `num_documents` documents of that query length × `document_length_ratio` tokens. Targets and counts of a request are the sums over its texts.

use rand_chacha::ChaCha8Rng;

use super::fit::record_misses;
use super::measure::{to_u32, Measure};
use super::random::{draw_len, in_parallel, request_rng, word_pool, RandomText};
use super::{DatasetContext, DatasetError, DatasetStats, Materialized, PromptItem};
use crate::api::Prompt;
use crate::plan::spec::TokenRange;

/// Documents per rerank request when `num_documents` is not set.
const DEFAULT_DOCUMENTS: u32 = 5;

/// Requests of `batch` inputs of `input` tokens each.
pub(crate) fn embedding(
    input: TokenRange,
    batch: u32,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let measure = text_measure(ctx)?;
    let tok = measure.require("dataset kind `random_embedding`")?;
    if input.min() == 0 || input.min() > input.max() {
        return Err(DatasetError::Invalid(format!(
            "input_tokens must be at least 1 with min <= max, got {input:?}"
        )));
    }
    let batch = batch.max(1);
    let texts = RandomText::plain(&measure, word_pool(tok)?)?;
    let items = in_parallel(ctx.range(), |index| {
        let mut rng = request_rng(ctx.seed, index);
        let lengths: Vec<TokenRange> = vec![input; batch as usize];
        let (inputs, target, client) = draw_texts(&texts, &lengths, &mut rng)?;
        Ok(item(Prompt::Embedding(inputs), target, client))
    })?;
    Ok(finish(items))
}

/// Requests of a `query` and `documents` documents of `ratio` × its length.
pub(crate) fn rerank(
    query: TokenRange,
    documents: Option<u32>,
    ratio: f64,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let measure = text_measure(ctx)?;
    let tok = measure.require("dataset kind `random_rerank`")?;
    if query.min() == 0 || query.min() > query.max() || !ratio.is_finite() || ratio <= 0.0 {
        return Err(DatasetError::Invalid(format!(
            "random_rerank needs query_tokens >= 1 (min <= max) and document_length_ratio > 0, \
             got {query:?} and {ratio}"
        )));
    }
    let documents = documents.unwrap_or(DEFAULT_DOCUMENTS).max(1) as usize;
    let texts = RandomText::plain(&measure, word_pool(tok)?)?;
    let items = in_parallel(ctx.range(), |index| {
        let mut rng = request_rng(ctx.seed, index);
        let query = draw_len(query, &mut rng);
        let document = ((f64::from(query) * ratio).round() as u32).max(1);
        let mut lengths = vec![TokenRange::Fixed(query)];
        lengths.extend(std::iter::repeat_n(TokenRange::Fixed(document), documents));
        let (mut texts, target, client) = draw_texts(&texts, &lengths, &mut rng)?;
        let query = texts.remove(0);
        Ok(item(
            Prompt::Rerank {
                query,
                documents: texts,
            },
            target,
            client,
        ))
    })?;
    Ok(finish(items))
}

/// Texts are counted like a completions prompt: encoded with special tokens, no template.
fn text_measure(ctx: &DatasetContext) -> Result<Measure, DatasetError> {
    Measure::new(&DatasetContext {
        chat: false,
        tokenize_prompt: false,
        ..ctx.clone()
    })
}

/// One text per length: the texts, the sum of targets and the sum of counts.
fn draw_texts(
    texts: &RandomText<'_>,
    lengths: &[TokenRange],
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<String>, u32, u32), DatasetError> {
    let mut out = Vec::with_capacity(lengths.len());
    let (mut target, mut client) = (0u32, 0u32);
    for &range in lengths {
        let goal = draw_len(range, rng);
        let (text, measured) = texts.fit_text(goal, rng)?;
        target = target.saturating_add(goal);
        client = client.saturating_add(to_u32(measured.count.unwrap_or(0)));
        out.push(text);
    }
    Ok((out, target, client))
}

fn item(prompt: Prompt, target: u32, client: u32) -> PromptItem {
    PromptItem {
        prompt,
        target_input_tokens: Some(target),
        client_input_tokens: Some(client),
        output_tokens: None,
        class: None,
    }
}

fn finish(items: Vec<PromptItem>) -> Materialized {
    let mut stats = DatasetStats {
        distinct_prompts: items.len(),
        ..DatasetStats::default()
    };
    record_misses(&items, &mut stats);
    Materialized {
        items,
        warnings: Vec::new(),
        stats,
    }
}
