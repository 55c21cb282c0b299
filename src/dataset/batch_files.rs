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
use super::source::{numbered_lines, read_text, resolve};
use super::{DatasetContext, DatasetError, DatasetStats, Materialized, PromptItem};
use crate::api::Prompt;

/// Requests of `batch_size` inputs of the file at `path`.
pub(crate) fn embedding(
    path: &str,
    batch_size: u32,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let json = path.extension().is_some_and(|e| e == "jsonl") || text.trim_start().starts_with('{');
    let mut inputs = Vec::new();
    for (line, raw) in numbered_lines(&text) {
        if !json {
            inputs.push(raw.to_string());
            continue;
        }
        let value = parse(&path, line, raw)?;
        let found = ["text", "input", "query", "prompt"]
            .iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str));
        let input = found.ok_or_else(|| DatasetError::Line {
            path: path.clone(),
            line,
            message: "no `text`, `input`, `query` or `prompt` string".into(),
        })?;
        inputs.push(input.to_string());
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
        let value = parse(&path, line, raw)?;
        let located = |message: String| DatasetError::Line {
            path: path.clone(),
            line,
            message,
        };
        let query = value.get("query").and_then(Value::as_str);
        let query = query.ok_or_else(|| located("no `query` string".into()))?;
        let docs = match value.get("documents") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|d| d.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| located("`documents` must hold strings".into()))?,
            Some(other) => return Err(located(format!("`documents` is {}", json_type(other)))),
            None => return Err(located("no `documents` array".into())),
        };
        let keep = num_documents.map_or(docs.len(), |n| n as usize);
        pairs.push((
            query.to_string(),
            docs.into_iter().take(keep).collect::<Vec<_>>(),
        ));
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

fn parse(path: &std::path::Path, line: usize, raw: &str) -> Result<Value, DatasetError> {
    serde_json::from_str(raw).map_err(|source| DatasetError::Json {
        path: path.to_path_buf(),
        line,
        source,
    })
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
