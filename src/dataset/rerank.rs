//! `random_rerank` and `rerank`: one query and its documents per request for `/v1/rerank`.
//! Random queries are `query_tokens` long with `num_documents` documents (default 10) of
//! `document_length_ratio` × the query length (default 1); a file gives one
//! `{"query", "documents"}` record per JSONL line, cycled when the run needs more.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use super::embedding::{done, item};
use super::source::{numbered_lines, read_text, required_path};
use super::words::random_text;
use super::{DatasetContext, DatasetError, Materialized};
use crate::api::Prompt;
use crate::plan::spec::DatasetSpec;

const DEFAULT_DOCUMENTS: u32 = 10;

pub(crate) fn random(
    spec: &DatasetSpec,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let query_tokens = spec.query_tokens.ok_or(DatasetError::MissingKey {
        kind: "random_rerank".into(),
        key: "query_tokens",
    })?;
    let ratio = spec.document_length_ratio.unwrap_or(1.0);
    if !(ratio.is_finite() && ratio > 0.0) {
        return Err(DatasetError::Invalid(
            "document_length_ratio must be a positive number".into(),
        ));
    }
    let docs = spec.num_documents.unwrap_or(DEFAULT_DOCUMENTS).max(1);
    let doc_tokens = ((f64::from(query_tokens) * ratio).round() as u32).max(1);
    let tok = ctx.tokenizer.as_deref();
    let mut items = Vec::with_capacity(ctx.count);
    for i in 0..ctx.count {
        let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed ^ (i as u64).wrapping_mul(0x51_7cc1_b727));
        let (query, qn) = random_text(tok, query_tokens, &mut rng)?;
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

#[derive(Deserialize)]
struct Record {
    query: String,
    documents: Vec<String>,
}

pub(crate) fn file(spec: &DatasetSpec, ctx: &DatasetContext) -> Result<Materialized, DatasetError> {
    let path = required_path(spec, ctx, "rerank")?;
    let text = read_text(&path)?;
    let mut records = Vec::new();
    for (line, raw) in numbered_lines(&text) {
        let r: Record = serde_json::from_str(raw).map_err(|source| DatasetError::Json {
            path: path.clone(),
            line,
            source,
        })?;
        if r.documents.is_empty() {
            return Err(DatasetError::Line {
                path: path.clone(),
                line,
                message: "`documents` is empty".into(),
            });
        }
        records.push(r);
    }
    let tok = ctx.tokenizer.as_deref();
    let mut items = Vec::with_capacity(ctx.count);
    for i in 0..ctx.count {
        let r = &records[i % records.len()];
        let total = match tok {
            Some(t) => {
                let mut sum = t.count(&r.query, false)? as u32;
                for d in &r.documents {
                    sum += t.count(d, false)? as u32;
                }
                Some(sum)
            }
            None => None,
        };
        let prompt = Prompt::Rerank {
            query: r.query.clone(),
            documents: r.documents.clone(),
        };
        items.push(item(prompt, total));
    }
    let mut out = done(items);
    out.stats.source_prompts = records.len();
    Ok(out)
}
