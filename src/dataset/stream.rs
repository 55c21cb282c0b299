//! `PromptStream`: a run's prompts built as they are needed, window by window, item `i`
//! the same as `materialize`'s item `i` (the same seed, the same order), so a load bounded
//! only by its duration needs no count fixed in advance. Kinds that build each item from
//! its own random stream (random, images, embeddings, rerank, their file forms) build a
//! window from its first item on. The file kinds that shape a file's prompts (`prompt`,
//! `lines`, `jsonl`, `sharegpt`) shape them in their seeded order, twice as many each
//! time more are needed, and once the file is used up cycle through the prompts kept
//! without reading it again: their memory is bounded by the file, not by the run.

use super::{materialize, DatasetContext, DatasetError, DatasetStats, PromptItem};
use crate::plan::DatasetPlan;

/// A run's prompts, produced in order.
#[derive(Debug)]
pub struct PromptStream {
    plan: DatasetPlan,
    ctx: DatasetContext,
    next: usize,
    /// File kinds: the prompts shaped so far (every usable one once `exhausted`).
    shaped: Vec<PromptItem>,
    exhausted: bool,
    /// Warnings not yet taken, and every one seen (each is reported once).
    fresh: Vec<String>,
    seen: Vec<String>,
    stats: DatasetStats,
    /// A mix: its classes' streams (every other field then unused).
    mix: Option<Box<super::mix::MixStream>>,
}

impl PromptStream {
    /// The stream of `plan` for the run of `ctx` (its `first` and `count` are ignored).
    pub fn new(plan: &DatasetPlan, ctx: &DatasetContext) -> PromptStream {
        PromptStream {
            plan: plan.clone(),
            ctx: DatasetContext {
                first: 0,
                count: 0,
                ..ctx.clone()
            },
            next: 0,
            shaped: Vec::new(),
            exhausted: false,
            fresh: Vec::new(),
            seen: Vec::new(),
            stats: DatasetStats::default(),
            mix: plan
                .mix()
                .map(|m| Box::new(super::mix::MixStream::new(m, ctx))),
        }
    }

    /// The next `n` items.
    pub(crate) fn next_window(&mut self, n: usize) -> Result<Vec<PromptItem>, DatasetError> {
        if let Some(mix) = &mut self.mix {
            let items = mix.next_window(n)?;
            let warnings = mix.take_warnings();
            self.stats = mix.stats();
            self.note(warnings);
            self.next += items.len();
            return Ok(items);
        }
        // The file kinds (those with length rules) shape a file's prompts and cycle them.
        let items = if self.plan.select().is_some() {
            self.file_window(n)?
        } else {
            let ctx = DatasetContext {
                first: self.next,
                count: n,
                ..self.ctx.clone()
            };
            let m = materialize(&self.plan, &ctx)?;
            self.note(m.warnings);
            self.stats.source_prompts = m.stats.source_prompts;
            m.items
        };
        self.next += items.len();
        super::fit::record_misses(&items, &mut self.stats);
        self.stats.distinct_prompts = if self.plan.select().is_some() {
            self.shaped.len()
        } else {
            self.next
        };
        Ok(items)
    }

    /// Items `next .. next + n` of a file kind, shaping more of the file when needed.
    fn file_window(&mut self, n: usize) -> Result<Vec<PromptItem>, DatasetError> {
        let end = self.next.saturating_add(n);
        if !self.exhausted && self.shaped.len() < end {
            let count = end.max(self.shaped.len().saturating_mul(2));
            let ctx = DatasetContext {
                first: 0,
                count,
                ..self.ctx.clone()
            };
            let mut m = materialize(&self.plan, &ctx)?;
            self.note(m.warnings);
            self.stats.source_prompts = m.stats.source_prompts;
            self.stats.filtered_out = m.stats.filtered_out;
            let distinct = m.stats.distinct_prompts;
            self.exhausted = distinct < count;
            m.items.truncate(distinct);
            self.shaped = m.items;
        }
        if self.shaped.is_empty() {
            return Ok(Vec::new());
        }
        let len = self.shaped.len();
        Ok((self.next..end)
            .map(|i| self.shaped[i % len].clone())
            .collect())
    }

    fn note(&mut self, warnings: Vec<String>) {
        for w in warnings {
            if !self.seen.contains(&w) {
                self.seen.push(w.clone());
                self.fresh.push(w);
            }
        }
    }

    /// Counts `warnings` as reported already (by another stream of the same run).
    pub fn reported(&mut self, warnings: &[String]) {
        self.seen.extend(warnings.iter().cloned());
    }

    /// Warnings the stream met since the last call (each once).
    pub(crate) fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.fresh)
    }

    /// What the items so far met (targets, misses, distinct prompts).
    pub fn stats(&self) -> &DatasetStats {
        &self.stats
    }

    /// Items produced so far.
    pub(crate) fn produced(&self) -> usize {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Windows of a stream, put together, are `materialize`'s list for the same count.
    #[test]
    fn windows_add_up_to_the_materialized_list() {
        let dir = tempfile::tempdir().unwrap();
        let lines: String = (0..7).map(|i| format!("prompt number {i}\n")).collect();
        std::fs::write(dir.path().join("p.txt"), &lines).unwrap();
        let jsonl = r#"{"query": "q1", "documents": ["a", "b"]}
{"query": "q2", "documents": ["c"]}
"#;
        std::fs::write(dir.path().join("r.jsonl"), jsonl).unwrap();
        let tok = crate::tokenize::Tokenizer::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/smollm2"
        )))
        .unwrap();
        let specs = [
            json!({"kind": "lines", "path": "p.txt"}),
            json!({"kind": "lines", "path": "p.txt", "min_input_tokens": 4}),
            json!({"kind": "prompt", "text": "one fixed prompt"}),
            json!({"kind": "random", "input_tokens": {"min": 6, "max": 30}}),
            json!({"kind": "random_images", "width": 4, "height": 4}),
            json!({"kind": "random_embedding", "input_tokens": 5, "batch_size": 2}),
            json!({"kind": "random_rerank", "query_tokens": 4, "num_documents": 2}),
            json!({"kind": "embedding", "path": "p.txt", "batch_size": 3}),
            json!({"kind": "rerank", "path": "r.jsonl"}),
        ];
        for spec in specs {
            let spec: crate::plan::DatasetSpec = serde_json::from_value(spec).unwrap();
            let spec = DatasetPlan::from_spec(&spec).unwrap();
            for tokenizer in [None, Some(tok.clone())] {
                let ctx = DatasetContext {
                    base_dir: dir.path().to_path_buf(),
                    tokenizer: tokenizer.clone(),
                    seed: 9,
                    count: 40,
                    ..DatasetContext::default()
                };
                let Ok(listed) = materialize(&spec, &ctx) else {
                    continue; // a kind that needs the tokenizer
                };
                let mut stream = PromptStream::new(&spec, &ctx);
                let mut streamed = Vec::new();
                for n in [1, 7, 3, 13, 16] {
                    streamed.extend(stream.next_window(n).unwrap());
                }
                assert_eq!(streamed, listed.items, "{spec:?}");
                assert_eq!(stream.produced(), 40);
            }
        }
    }
}
