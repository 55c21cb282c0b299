//! `embedding` and `rerank` file kinds. `embedding`: a text file (one input per line) or
//! JSON Lines (`text`, `input`, `query` or `prompt` string per line); each request takes
//! `batch_size` inputs. `rerank`: JSON Lines of `{"query": ..., "documents": [...]}`, cut to
//! `num_documents` documents when set. Inputs come in a seeded order, cycled when the run
//! needs more; counts are per input with special tokens, summed per request.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::jsonl::json_type;
use super::measure::to_u32;
use super::source::{json_line, numbered_lines, read_text, resolve, LineError};
use super::{DatasetContext, DatasetError, DatasetStats, Materialized, PromptItem};
use crate::api::Prompt;

/// Whether an embedding file is JSON Lines (else one input per line).
pub(crate) fn is_json(path: &std::path::Path, text: &str) -> bool {
    path.extension().is_some_and(|e| e == "jsonl") || text.trim_start().starts_with('{')
}

/// One input of an embedding file: the line, or its `text`/`input`/`query`/`prompt`.
pub(crate) fn embedding_input(raw: &str, json: bool) -> Result<String, LineError> {
    if !json {
        return Ok(raw.to_string());
    }
    let value = json_line(raw)?;
    let found = ["text", "input", "query", "prompt"]
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str));
    Ok(found
        .ok_or("no `text`, `input`, `query` or `prompt` string")?
        .to_string())
}

/// One record of a rerank file: its query and documents.
pub(crate) fn rerank_record(raw: &str) -> Result<(String, Vec<String>), LineError> {
    let value = json_line(raw)?;
    let query = value.get("query").and_then(Value::as_str);
    let query = query.ok_or("no `query` string")?;
    let docs = match value.get("documents") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|d| d.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or("`documents` must hold strings")?,
        Some(other) => return Err(format!("`documents` is {}", json_type(other)).into()),
        None => return Err("no `documents` array".into()),
    };
    Ok((query.to_string(), docs))
}

/// Requests of `batch_size` inputs of the file at `path`.
pub(crate) fn embedding(
    path: &str,
    batch_size: u32,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let json = is_json(&path, &text);
    let mut inputs = Vec::new();
    for (line, raw) in numbered_lines(&text) {
        inputs.push(embedding_input(raw, json).map_err(|e| e.at(&path, line))?);
    }
    if inputs.is_empty() {
        return Err(DatasetError::Empty { path });
    }
    let batch = batch_size.max(1) as usize;
    let order = seeded_order(inputs.len(), ctx.seed);
    let items = ctx
        .range()
        .map(|i| {
            let texts: Vec<String> = (0..batch)
                .map(|j| inputs[order[(i * batch + j) % order.len()]].clone())
                .collect();
            item(ctx, Prompt::Embedding(texts.clone()), &texts)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(finish(
        items,
        inputs.len(),
        ctx.end() * batch > inputs.len(),
        &path,
    ))
}

/// The records of the file at `path`, each cut to `num_documents` documents when set.
pub(crate) fn rerank(
    path: &str,
    num_documents: Option<u32>,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let mut pairs = Vec::new();
    for (line, raw) in numbered_lines(&text) {
        let (query, docs) = rerank_record(raw).map_err(|e| e.at(&path, line))?;
        let keep = num_documents.map_or(docs.len(), |n| n as usize);
        pairs.push((query, docs.into_iter().take(keep).collect::<Vec<_>>()));
    }
    if pairs.is_empty() {
        return Err(DatasetError::Empty { path });
    }
    let order = seeded_order(pairs.len(), ctx.seed);
    let items = ctx
        .range()
        .map(|i| {
            let (query, documents) = pairs[order[i % order.len()]].clone();
            let mut texts = vec![query.clone()];
            texts.extend(documents.iter().cloned());
            item(ctx, Prompt::Rerank { query, documents }, &texts)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(finish(items, pairs.len(), ctx.end() > pairs.len(), &path))
}

fn seeded_order(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    order
}

/// A request whose input count is the sum of its texts' counts (with special tokens).
fn item(
    ctx: &DatasetContext,
    prompt: Prompt,
    texts: &[String],
) -> Result<PromptItem, DatasetError> {
    let client_input_tokens = match &ctx.tokenizer {
        Some(tok) => {
            let mut total = 0;
            for t in texts {
                total += tok.count(t, true)?;
            }
            Some(to_u32(total))
        }
        None => None,
    };
    Ok(PromptItem {
        prompt,
        target_input_tokens: None,
        client_input_tokens,
        output_tokens: None,
        class: None,
    })
}

fn finish(
    items: Vec<PromptItem>,
    source: usize,
    cycled: bool,
    path: &std::path::Path,
) -> Materialized {
    let warnings = if cycled {
        vec![format!(
            "{} gives {source} entries, fewer than the run needs: entries repeat",
            path.display()
        )]
    } else {
        Vec::new()
    };
    Materialized {
        stats: DatasetStats {
            source_prompts: source,
            distinct_prompts: items.len().min(source),
            ..DatasetStats::default()
        },
        items,
        warnings,
    }
}
