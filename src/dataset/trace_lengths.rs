//! The public traces replayed (`trace` with `format = "mooncake" | "burstgpt" | "azure"`):
//! each record's prompt synthesised exactly `input_length` tokens long as the server counts
//! it (chat template included, as kind `random` does), sent at its recorded offset. With
//! Mooncake's `hash_ids`, id `h` is one fixed block of `block_size` tokens of words drawn
//! from ChaCha stream `h` of the run seed (mixed with a salt), so requests sharing ids
//! share real prefixes; the prompt's last block is the first words of its id's block, as
//! many as make the prompt exact. What each request shares with those sent before it is
//! counted here, as the records come (`TraceSharing`, the planned hit ratio's input).
//! Knows nothing of HTTP or the engine.

use std::collections::HashMap;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::fit::fit;
use super::measure::{to_u32, Measure};
use super::random::{compose, draw, in_parallel, request_rng, word_pool, RandomText};
use super::source::{read_text, resolve};
use super::trace_formats::{records, LengthRecord};
use super::{DatasetContext, DatasetError, PromptItem};
use crate::plan::{TraceFormat, TracePlan};
use crate::tokenize::{Tokenizer, WordPool};

/// Mixed into the run seed for the blocks of `hash_ids` ("blocks").
const BLOCK_SALT: u64 = 0x626c_6f63_6b73;

/// One request of a public trace, ready to send at `offset` after the replay's start.
#[derive(Debug, Clone, PartialEq)]
pub struct LengthRequest {
    /// Scaled by `speed`; the first record kept is at zero.
    pub offset: Duration,
    /// The synthesised prompt, its target (`input_length`) and client count.
    pub item: PromptItem,
    /// The recorded answer length (`output_length`).
    pub output: u32,
    /// The model the record names after `model_override` / `model_mapping`; `None`: the
    /// run's.
    pub model: Option<String>,
}

/// What each request of a trace shares with the requests sent before it, in tokens as the
/// server sees them (the chat template's opening included).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceSharing {
    /// Tokens of the fixed opening every prompt starts with.
    pub lead: u32,
    /// Per request (in send order): tokens shared with the earlier ones.
    pub shared: Vec<u32>,
}

/// A public trace, ordered by time, windowed and cut to the requests the run needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LengthTrace {
    pub requests: Vec<LengthRequest>,
    pub warnings: Vec<String>,
    /// Records in the file.
    pub records: usize,
    pub sharing: TraceSharing,
}

/// Reads the trace of `plan` and synthesises the prompts of its first `ctx.count`
/// records (all if there are fewer) within its window.
pub fn read(plan: &TracePlan, ctx: &DatasetContext) -> Result<LengthTrace, DatasetError> {
    let path = resolve(ctx, &plan.path);
    let text = read_text(&path)?;
    let mut raws = Vec::new();
    for r in records(&text, plan.format) {
        raws.push(r.map_err(|(line, e)| e.at(&path, line))?);
    }
    let records = raws.len();
    let mut warnings = Vec::new();
    let empty = raws.iter().filter(|r| r.input == 0).count();
    if empty > 0 {
        warnings.push(format!(
            "{}: {empty} record(s) with no input tokens are left out",
            path.display()
        ));
        raws.retain(|r| r.input > 0);
    }
    if raws.is_empty() {
        return Err(DatasetError::Invalid(format!(
            "{} holds no record with input tokens",
            path.display()
        )));
    }
    if raws.windows(2).any(|w| w[1].at_us < w[0].at_us) {
        warnings.push(format!(
            "{}: records are not in time order; they are replayed sorted by timestamp",
            path.display()
        ));
        raws.sort_by_key(|r| (r.at_us, r.line));
    }
    let times: Vec<i128> = raws.iter().map(|r| r.at_us).collect();
    let (keep, offsets) = super::trace::window(&times, plan, ctx.count)?;
    warnings.extend(block_warning(plan, &raws[keep.clone()]));
    let records_kept = &raws[keep];
    let (items, sharing) = Builder::new(plan, ctx)?.build(records_kept)?;
    let mut requests = Vec::with_capacity(items.len());
    for ((r, offset), item) in records_kept.iter().zip(offsets).zip(items) {
        let model = match &plan.model_override {
            Some(m) => Some(m.clone()),
            None => r
                .model
                .as_ref()
                .and_then(|m| plan.model_mapping.get(m).cloned()),
        };
        requests.push(LengthRequest {
            offset,
            item,
            output: r.output,
            model,
        });
    }
    Ok(LengthTrace {
        requests,
        warnings,
        records,
        sharing,
    })
}

/// A warning when most records' `hash_ids` do not cover `input_length` in blocks of
/// `block_size` (a `block_size` other than the trace's).
fn block_warning(plan: &TracePlan, raws: &[LengthRecord]) -> Option<String> {
    if plan.format != TraceFormat::Mooncake {
        return None;
    }
    let bs = u64::from(plan.block_size.max(1));
    let with_ids: Vec<_> = raws.iter().filter(|r| !r.hash_ids.is_empty()).collect();
    let off = with_ids
        .iter()
        .filter(|r| r.hash_ids.len() as u64 != u64::from(r.input).div_ceil(bs))
        .count();
    (off * 2 > with_ids.len()).then(|| {
        format!(
            "{off} of {} records have a number of `hash_ids` other than input_length / \
             block_size ({bs}): is block_size the trace's?",
            with_ids.len()
        )
    })
}

/// Builds the prompts (each id's block once, then every prompt, spread over the cores),
/// and counts what each shares with those before it, in send order.
struct Builder<'a> {
    measure: Measure,
    tok: &'a Tokenizer,
    pool: &'a WordPool,
    seed: u64,
    block_size: u32,
    /// Tokens the server sees for an empty prompt (template, special tokens).
    base: usize,
    /// Tokens of the fixed opening every prompt starts with.
    lead: u32,
}

/// A built prompt and the tokens of each id it sends, in order.
type Built = (PromptItem, Vec<(u64, u32)>);

/// What the requests sent so far hold of each id's block, and what each shared.
#[derive(Debug, Default)]
struct Ledger {
    /// Per id: the most of its block's tokens any request sent so far.
    seen: HashMap<u64, u32>,
    sharing: TraceSharing,
}

impl Ledger {
    /// Counts what request `index` (`count` tokens, sending `sent`: each id's tokens in
    /// order) shares with the earlier ones: the opening (after the first request), then
    /// its leading ids' tokens sent before, up to the first id sent shorter than here or
    /// never.
    fn note(&mut self, index: usize, sent: &[(u64, u32)], count: u32) {
        let mut shared = if index == 0 { 0 } else { self.sharing.lead };
        for (id, len) in sent {
            let Some(before) = self.seen.get(id).copied() else {
                break;
            };
            shared += before.min(*len);
            if before < *len {
                break;
            }
        }
        for (id, len) in sent {
            let slot = self.seen.entry(*id).or_insert(0);
            *slot = (*slot).max(*len);
        }
        self.sharing.shared.push(shared.min(count));
    }
}

impl<'a> Builder<'a> {
    fn new(plan: &TracePlan, ctx: &'a DatasetContext) -> Result<Builder<'a>, DatasetError> {
        let measure = Measure::new(ctx)?;
        let Some(tok) = ctx.tokenizer.as_deref() else {
            return Err(DatasetError::NeedsTokenizer {
                what: TraceFormat::SYNTHESIZED.into(),
            });
        };
        let pool = word_pool(tok)?;
        let base = measure.text("")?.count.unwrap_or(0);
        let lead = to_u32(measure.lead_tokens()?);
        Ok(Builder {
            measure,
            tok,
            pool,
            seed: ctx.seed,
            block_size: plan.block_size.max(1),
            base,
            lead,
        })
    }

    /// The prompts of `records` (in send order) and what each shares with those before.
    fn build(
        &self,
        records: &[LengthRecord],
    ) -> Result<(Vec<PromptItem>, TraceSharing), DatasetError> {
        let mut ids: Vec<u64> = records
            .iter()
            .flat_map(|r| r.hash_ids[..self.whole_blocks(r)].iter().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let texts = in_parallel(0..ids.len(), |k| self.block(ids[k]))?;
        let blocks: HashMap<u64, String> = ids.into_iter().zip(texts).collect();
        let built = in_parallel(0..records.len(), |i| self.prompt(i, &records[i], &blocks))?;
        let mut ledger = Ledger::default();
        ledger.sharing.lead = self.lead;
        let mut items = Vec::with_capacity(built.len());
        for (i, (item, sent)) in built.into_iter().enumerate() {
            let count = item.client_input_tokens.unwrap_or(records[i].input);
            ledger.note(i, &sent, count);
            items.push(item);
        }
        Ok((items, ledger.sharing))
    }

    /// How many of `r`'s ids are sent as whole blocks: all but the last, as many as fit.
    fn whole_blocks(&self, r: &LengthRecord) -> usize {
        let room = (r.input as usize).saturating_sub(self.base);
        r.hash_ids
            .len()
            .saturating_sub(1)
            .min(room / self.block_size as usize)
    }

    /// Request `index`'s prompt: the whole blocks of its ids, then the words of the next
    /// id's block (or its own words) up to `input` tokens; with the tokens of each id sent.
    fn prompt(
        &self,
        index: usize,
        r: &LengthRecord,
        blocks: &HashMap<u64, String>,
    ) -> Result<Built, DatasetError> {
        let bs = self.block_size;
        let ids = &r.hash_ids;
        let full = self.whole_blocks(r);
        let mut prefix = String::new();
        for id in &ids[..full] {
            prefix.push_str(blocks.get(id).map_or("", String::as_str));
        }
        let mut rng = match ids.get(full) {
            Some(id) => block_rng(self.seed, *id),
            None => request_rng(self.seed, index),
        };
        let texts = RandomText::after(&self.measure, self.pool, &prefix)?;
        let (text, measured) = texts.fit_text(r.input, &mut rng)?;
        let (prompt, client_input_tokens) = self.measure.finish_text(text, measured);
        let count = client_input_tokens.unwrap_or(r.input);
        // The tokens of each id this prompt sends: whole blocks, then the partial one.
        let tail = (count as usize).saturating_sub(self.base + full * bs as usize);
        let mut sent: Vec<(u64, u32)> = ids[..full].iter().map(|id| (*id, bs)).collect();
        sent.extend(ids.get(full).map(|id| (*id, to_u32(tail).min(bs))));
        let item = PromptItem {
            prompt,
            target_input_tokens: Some(r.input),
            client_input_tokens,
            output_tokens: Some(r.output),
            class: None,
        };
        Ok((item, sent))
    }

    /// Id `id`'s block: words of its own stream, exactly `block_size` tokens on their own
    /// (each word keeps its leading space, so blocks join without merging).
    fn block(&self, id: u64) -> Result<String, DatasetError> {
        let target = self.block_size as usize;
        let mut rng = block_rng(self.seed, id);
        let mut words = Vec::new();
        let (tok, pool) = (self.tok, self.pool);
        let fitted = fit(target, target, target * 2 + 16, |k| {
            draw(&mut words, k, pool, &mut rng);
            let text = compose("", &words[..k], pool, false);
            Ok((tok.count(&text, false)?, text))
        })?;
        Ok(fitted.value)
    }
}

/// The stream of id `id`'s block words.
fn block_rng(seed: u64, id: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ BLOCK_SALT);
    rng.set_stream(id);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_records_is_an_error_before_any_prompt_is_built() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.csv"),
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,0,3\n",
        )
        .unwrap();
        let spec: crate::plan::spec::DatasetSpec = serde_json::from_value(
            serde_json::json!({"kind": "trace", "path": "t.csv", "format": "azure"}),
        )
        .unwrap();
        let Ok(crate::plan::DatasetPlan::Trace(plan)) = crate::plan::DatasetPlan::from_spec(&spec)
        else {
            panic!("a trace");
        };
        let ctx = DatasetContext {
            base_dir: dir.path().to_path_buf(),
            count: 10,
            ..Default::default()
        };
        let e = read(&plan, &ctx).unwrap_err().to_string();
        assert!(e.contains("holds no record with input tokens"), "{e}");
    }

    #[test]
    fn shared_tokens_follow_the_leading_ids_seen_before() {
        let mut ledger = Ledger::default();
        ledger.sharing.lead = 3;
        ledger.note(0, &[(1, 16), (2, 5)], 24);
        // Id 2 was sent 5 tokens long: 5 of its 9 are shared, and nothing after.
        ledger.note(1, &[(1, 16), (2, 9)], 28);
        ledger.note(2, &[(1, 16), (2, 16), (3, 4)], 39);
        ledger.note(3, &[(4, 10)], 13);
        ledger.note(4, &[(1, 16), (2, 16), (3, 4)], 39);
        assert_eq!(
            ledger.sharing.shared,
            [0, 3 + 16 + 5, 3 + 16 + 9, 3, 3 + 16 + 16 + 4]
        );
    }
}
