//! `kind = "random"`: prompts of words drawn from the tokenizer's vocabulary, exactly
//! `input_tokens` long as the server will count them (chat template included), starting with
//! `prefix_tokens` shared by every request of its prefix group (counted as the server sees
//! them: the chat template's opening or BOS, then shared words; one group by default, see
//! `prefix_groups`). Request `i` draws from its own ChaCha stream of the run seed, so
//! prompts do not depend on the request count.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fit::{fit, record_misses};
use super::measure::{to_u32, Measure, Measured};
use super::prefix_groups::{group_of, group_prefix, groups_in};
use super::split::SplitCounter;
use super::{DatasetContext, DatasetError, DatasetStats, Materialized, PromptItem};
use crate::plan::dataset_plan::PrefixGroups;
use crate::plan::spec::TokenRange;
use crate::tokenize::{Tokenizer, WordPool};

/// At most this many threads build prompts, each with at least `MIN_PER_THREAD` prompts.
const MAX_THREADS: usize = 8;
const MIN_PER_THREAD: usize = 16;

/// Prompts of `input` tokens whose first `prefix_tokens` are shared by the requests of
/// each prefix group (one group: every request).
pub(crate) fn materialize(
    input: TokenRange,
    (prefix_tokens, groups): (u32, &PrefixGroups),
    ctx: &DatasetContext,
    measure: &Measure,
) -> Result<Materialized, DatasetError> {
    let tok = measure.require("dataset kind `random`")?;
    check_lengths(input, prefix_tokens)?;
    let pool = word_pool(tok)?;
    // The shared part the server sees is the template's opening (or BOS) plus the prefix words.
    let lead = to_u32(measure.lead_tokens()?);
    let mut warnings = Vec::new();
    if prefix_tokens > 0 && prefix_tokens <= lead {
        warnings.push(format!(
            "prefix_tokens ({prefix_tokens}) is no longer than what the server sees before \
             every prompt anyway ({lead} tokens of chat template or special tokens): no \
             shared words are added"
        ));
    }
    // Only the groups these requests take are built (a window of a long run may use few).
    let used = groups_in(groups, ctx.seed, ctx.range());
    let words = prefix_tokens.saturating_sub(lead);
    let prefixes = used
        .iter()
        .map(|&g| group_prefix(tok, pool, ctx.seed, g, words))
        .collect::<Result<Vec<_>, _>>()?;
    let splits = prefixes
        .iter()
        .map(|p| SplitCounter::new(measure, p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut slot = vec![usize::MAX; groups.count.max(1) as usize];
    let mut texts = Vec::with_capacity(used.len());
    for (k, (&g, prefix)) in used.iter().zip(&prefixes).enumerate() {
        slot[g] = k;
        texts.push(RandomText {
            measure,
            split: splits[k].as_ref(),
            pool,
            prefix,
            // Tokens the server sees with the prefix alone (template overhead included).
            base: measure.text(prefix)?.count.unwrap_or(0),
            trim: true,
        });
    }
    let build = |index: usize| {
        let mut rng = request_rng(ctx.seed, index);
        let target = draw_len(input, &mut rng);
        let texts = &texts[slot[group_of(groups, ctx.seed, index)]];
        texts.one_prompt(target, &mut rng)
    };
    let items = in_parallel(ctx.range(), build)?;
    let mut stats = DatasetStats {
        distinct_prompts: items.len(),
        ..DatasetStats::default()
    };
    record_misses(&items, &mut stats);
    let base = texts.iter().map(|t| t.base).max().unwrap_or(0);
    if base > input.min() as usize {
        warnings.push(format!(
            "the shared prefix and chat template already take {base} tokens, more than \
             input_tokens ({}): prompts are longer than asked",
            input.min()
        ));
    }
    Ok(Materialized {
        items,
        warnings,
        stats,
    })
}

/// The tokenizer's random-text vocabulary; an error when it has none.
pub(crate) fn word_pool(tok: &Tokenizer) -> Result<&WordPool, DatasetError> {
    let pool = tok.word_pool();
    if pool.is_empty() {
        return Err(DatasetError::Invalid(format!(
            "the tokenizer {} has no plain tokens to build random prompts from",
            tok.path().display()
        )));
    }
    Ok(pool)
}

/// A token count drawn from `range`.
pub(crate) fn draw_len(range: TokenRange, rng: &mut ChaCha8Rng) -> u32 {
    match range {
        TokenRange::Fixed(n) => n,
        TokenRange::Range { min, max } => rng.gen_range(min.min(max)..=max.max(min)),
    }
}

fn check_lengths(input: TokenRange, prefix: u32) -> Result<(), DatasetError> {
    if input.min() > input.max() {
        return Err(DatasetError::Invalid(format!(
            "input_tokens has min {} above max {}",
            input.min(),
            input.max()
        )));
    }
    if input.max() == 0 {
        return Err(DatasetError::Invalid(
            "input_tokens must be at least 1".into(),
        ));
    }
    if prefix > input.min() {
        return Err(DatasetError::Invalid(format!(
            "prefix_tokens ({prefix}) is larger than input_tokens ({}); the prefix is counted \
             inside input_tokens",
            input.min()
        )));
    }
    Ok(())
}

/// `build(range)` in order, spread over the machine's cores (each request has its own
/// random stream, so the result does not depend on the number of threads).
pub(crate) fn in_parallel<T, F>(
    range: std::ops::Range<usize>,
    build: F,
) -> Result<Vec<T>, DatasetError>
where
    T: Send,
    F: Fn(usize) -> Result<T, DatasetError> + Sync,
{
    let (first, count) = (range.start, range.len());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(MAX_THREADS).min(count / MIN_PER_THREAD).max(1);
    if threads == 1 {
        return range.map(&build).collect();
    }
    let per = count.div_ceil(threads);
    let build = &build;
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let range = (first + t * per)..(first + ((t + 1) * per).min(count));
            let handle = std::thread::Builder::new()
                .name(format!("perfplan-dataset-{t}"))
                .spawn_scoped(scope, move || {
                    range.map(build).collect::<Result<Vec<_>, _>>()
                })
                .map_err(|e| DatasetError::Invalid(format!("cannot start a thread: {e}")))?;
            handles.push(handle);
        }
        let mut items = Vec::with_capacity(count);
        for handle in handles {
            let part = handle
                .join()
                .map_err(|_| DatasetError::Invalid("a prompt-building thread panicked".into()))??;
            items.extend(part);
        }
        Ok(items)
    })
}

/// Stream 0 of the run seed is the prefix; request `i` uses stream `i + 1`.
pub(crate) fn request_rng(seed: u64, index: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index as u64 + 1);
    rng
}

/// What every prompt of a run is built from.
pub(crate) struct RandomText<'a> {
    measure: &'a Measure,
    split: Option<&'a SplitCounter<'a>>,
    pool: &'a WordPool,
    prefix: &'a str,
    /// Tokens the server sees for the prefix alone.
    base: usize,
    /// The text never starts with a space (off where a prompt must begin with the very
    /// words another prompt has after its prefix: a public trace's blocks).
    trim: bool,
}

impl<'a> RandomText<'a> {
    /// Texts without a shared prefix, counted by `measure`.
    pub fn plain(measure: &'a Measure, pool: &'a WordPool) -> Result<Self, DatasetError> {
        Ok(RandomText {
            measure,
            split: None,
            pool,
            prefix: "",
            base: measure.text("")?.count.unwrap_or(0),
            trim: true,
        })
    }

    /// Texts after `prefix` (taken as it is), their words kept as drawn (a leading space
    /// included), counted by `measure`.
    pub fn after(
        measure: &'a Measure,
        pool: &'a WordPool,
        prefix: &'a str,
    ) -> Result<Self, DatasetError> {
        Ok(RandomText {
            measure,
            split: None,
            pool,
            prefix,
            base: measure.text(prefix)?.count.unwrap_or(0),
            trim: false,
        })
    }

    /// The prefix plus as many drawn words as make `target` tokens, measured.
    pub(crate) fn fit_text(
        &self,
        target: u32,
        rng: &mut ChaCha8Rng,
    ) -> Result<(String, Measured), DatasetError> {
        let goal = target as usize;
        let mut words = Vec::new();
        let fitted = fit(goal, goal.saturating_sub(self.base), goal * 2 + 16, |k| {
            draw(&mut words, k, self.pool, rng);
            let (text, measured) = self.build(&words[..k])?;
            Ok((measured.count.unwrap_or(0), (text, measured)))
        })?;
        Ok(fitted.value)
    }

    /// One prompt of `target` tokens.
    fn one_prompt(&self, target: u32, rng: &mut ChaCha8Rng) -> Result<PromptItem, DatasetError> {
        let (text, measured) = self.fit_text(target, rng)?;
        let (prompt, client_input_tokens) = self.measure.finish_text(text, measured);
        Ok(PromptItem {
            prompt,
            target_input_tokens: Some(target),
            client_input_tokens,
            output_tokens: None,
            class: None,
        })
    }

    /// The prompt text of `words` after the prefix, measured as the server will see it.
    fn build(&self, words: &[usize]) -> Result<(String, Measured), DatasetError> {
        if let Some(split) = self.split {
            let suffix = compose("", words, self.pool, false);
            if let Some(measured) = split.measure(&suffix)? {
                return Ok((format!("{}{suffix}", self.prefix), measured));
            }
        }
        let text = compose(self.prefix, words, self.pool, self.trim);
        let measured = self.measure.text(&text)?;
        Ok((text, measured))
    }
}

/// Extends `words` (pool indices) to at least `k` draws.
pub(crate) fn draw(words: &mut Vec<usize>, k: usize, pool: &WordPool, rng: &mut ChaCha8Rng) {
    while words.len() < k {
        words.push(rng.gen_range(0..pool.len()));
    }
}

/// `prefix` followed by the words; with `trim`, the text never starts with a space.
pub(crate) fn compose(prefix: &str, words: &[usize], pool: &WordPool, trim: bool) -> String {
    let mut text = String::with_capacity(prefix.len() + words.len() * 8);
    text.push_str(prefix);
    for &index in words {
        if let Some((_, word)) = pool.word(index) {
            text.push_str(if trim && text.is_empty() {
                word.trim_start()
            } else {
                word
            });
        }
    }
    text
}
