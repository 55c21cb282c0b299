//! `random_rerank` without a tokenizer: one query of about `query_tokens` words (fixed, or
//! drawn per request from `{min, max}`) and `num_documents` documents (default 10) of
//! `document_length_ratio` × that query length
//! (approximate lengths; with the model's tokenizer, `random_batch` makes them exact).
//! Files are read by `batch_files`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::embedding::{done, item};
use super::words::{draw_len, random_text};
use super::{DatasetContext, DatasetError, Materialized};
use crate::api::Prompt;
use crate::plan::spec::TokenRange;

const DEFAULT_DOCUMENTS: u32 = 10;

/// Requests of a query of about `query_tokens` words and `documents` documents.
pub(crate) fn random(
    query_tokens: TokenRange,
    documents: Option<u32>,
    ratio: f64,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    if !(ratio.is_finite() && ratio > 0.0) {
        return Err(DatasetError::Invalid(
            "document_length_ratio must be a positive number".into(),
        ));
    }
    let docs = documents.unwrap_or(DEFAULT_DOCUMENTS).max(1);
    let tok = ctx.tokenizer.as_deref();
    let mut items = Vec::with_capacity(ctx.count);
    for i in ctx.range() {
        let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed ^ (i as u64).wrapping_mul(0x51_7cc1_b727));
        let query_len = draw_len(query_tokens, &mut rng).max(1);
        let doc_tokens = ((f64::from(query_len) * ratio).round() as u32).max(1);
        let (query, qn) = random_text(tok, query_len, &mut rng)?;
        let mut total = qn;
        let mut documents = Vec::with_capacity(docs as usize);
        for _ in 0..docs {
            let (d, n) = random_text(tok, doc_tokens, &mut rng)?;
            total = total.zip(n).map(|(a, b)| a + b);
            documents.push(d);
        }
        items.push(item(Prompt::Rerank { query, documents }, total));
    }
    Ok(done(items))
}
