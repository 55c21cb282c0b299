//! `random_embedding` and `embedding`: requests of `batch_size` inputs for `/v1/embeddings`.
//! Random inputs are `input_tokens` long; a file gives one input per line (text) or per
//! JSONL record (`field`, else `text`, `input`, `prompt` or `query`), batched in file order
//! and cycled when the run needs more.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::source::{numbered_lines, read_text, required_path};
use super::words::{draw_len, random_text};
use super::{DatasetContext, DatasetError, DatasetStats, Materialized, PromptItem};
use crate::api::Prompt;
use crate::plan::spec::DatasetSpec;

pub(crate) fn random(
    spec: &DatasetSpec,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let input = spec.input_tokens.ok_or(DatasetError::MissingKey {
        kind: "random_embedding".into(),
        key: "input_tokens",
    })?;
    let batch = batch_size(spec)?;
    let tok = ctx.tokenizer.as_deref();
    let mut items = Vec::with_capacity(ctx.count);
    for i in 0..ctx.count {
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

pub(crate) fn file(spec: &DatasetSpec, ctx: &DatasetContext) -> Result<Materialized, DatasetError> {
    let path = required_path(spec, ctx, "embedding")?;
    let text = read_text(&path)?;
    let jsonl = path
        .extension()
        .is_some_and(|e| e == "jsonl" || e == "json");
    let mut texts = Vec::new();
    for (line, raw) in numbered_lines(&text) {
        if !jsonl {
            texts.push(raw.to_string());
            continue;
        }
        let v: Value = serde_json::from_str(raw).map_err(|source| DatasetError::Json {
            path: path.clone(),
            line,
            source,
        })?;
        let keys = spec
            .field
            .as_deref()
            .map_or(vec!["text", "input", "prompt", "query"], |f| vec![f]);
        let found = keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str));
        match found {
            Some(t) => texts.push(t.to_string()),
            None => {
                return Err(DatasetError::Line {
                    path: path.clone(),
                    line,
                    message: format!("no text field (looked for {})", keys.join(", ")),
                })
            }
        }
    }
    let batch = batch_size(spec)?;
    let tok = ctx.tokenizer.as_deref();
    let mut items = Vec::with_capacity(ctx.count);
    for i in 0..ctx.count {
        let inputs: Vec<String> = (0..batch)
            .map(|j| texts[(i * batch + j) % texts.len()].clone())
            .collect();
        let total = match tok {
            Some(t) => {
                let mut sum = 0u32;
                for s in &inputs {
                    sum += t.count(s, false)? as u32;
                }
                Some(sum)
            }
            None => None,
        };
        items.push(item(Prompt::Embedding(inputs), total));
    }
    let mut out = done(items);
    out.stats.source_prompts = texts.len();
    if ctx.count * batch > texts.len() {
        out.warnings.push(format!(
            "{} holds {} inputs; the run sends {}: inputs repeat",
            path.display(),
            texts.len(),
            ctx.count * batch
        ));
    }
    Ok(out)
}

fn batch_size(spec: &DatasetSpec) -> Result<usize, DatasetError> {
    match spec.batch_size.unwrap_or(1) {
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
