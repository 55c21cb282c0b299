//! `random_embedding` without a tokenizer: requests of `batch_size` inputs of about
//! `input_tokens` words each (approximate lengths; with the model's tokenizer,
//! `random_batch` makes them exact). Files are read by `batch_files`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::words::{draw_len, random_text};
use super::{DatasetContext, DatasetError, DatasetStats, Materialized, PromptItem};
use crate::api::Prompt;
use crate::plan::spec::TokenRange;

/// Requests of `batch_size` inputs of about `input` words each.
pub(crate) fn random(
    input: TokenRange,
    batch_size: u32,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let batch = checked_batch(batch_size)?;
    let tok = ctx.tokenizer.as_deref();
    let mut items = Vec::with_capacity(ctx.count);
    for i in ctx.range() {
        let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
        let mut inputs = Vec::with_capacity(batch);
        let mut total: Option<u32> = Some(0);
        for _ in 0..batch {
            let (text, n) = random_text(tok, draw_len(input, &mut rng), &mut rng)?;
            total = total.zip(n).map(|(a, b)| a + b);
            inputs.push(text);
        }
        items.push(item(Prompt::Embedding(inputs), total));
    }
    Ok(done(items))
}

fn checked_batch(batch_size: u32) -> Result<usize, DatasetError> {
    match batch_size {
        0 => Err(DatasetError::Invalid(
            "batch_size must be at least 1".into(),
        )),
        n => Ok(n as usize),
    }
}

pub(crate) fn item(prompt: Prompt, client_input_tokens: Option<u32>) -> PromptItem {
    PromptItem {
        prompt,
        target_input_tokens: None,
        client_input_tokens,
        output_tokens: None,
        class: None,
    }
}

pub(crate) fn done(items: Vec<PromptItem>) -> Materialized {
    Materialized {
        stats: DatasetStats {
            distinct_prompts: items.len(),
            ..DatasetStats::default()
        },
        items,
        warnings: Vec::new(),
    }
}
