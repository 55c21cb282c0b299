//! Turning a file's prompts into a run's items: a seeded order, the `min_input_tokens` /
//! `max_input_tokens` filters, `target_input_len` with `input_len_mode` (longer prompts are
//! cut to the target; shorter ones are kept by cap, skipped by drop) and `prefix_file`
//! (real text filling every prompt up to exactly the target, as a system message or
//! before the user text), and cycling
//! when the run needs more requests than the file has prompts.
//! Lengths are counted as the server will see them (chat template included in chat mode).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use super::fit::{fit, record_misses};
use super::measure::{system_message, to_u32, user_message, Measure, Measured, Mode};
use super::prefix_file::{cut_text, PrefixFile, JOINER};
use super::prefix_fill::{fast_fill, Marked, MARKER};
use super::source::{resolve, Candidate, Source, SourceSet};
use super::{DatasetContext, DatasetError, DatasetStats, Materialized, PromptItem};
use crate::api::Prompt;
use crate::plan::spec::{InputLenMode, PrefixRole};
use crate::plan::FileSelect;

/// The length rules of a file dataset.
struct Shaping<'a> {
    measure: &'a Measure,
    target: Option<usize>,
    mode: InputLenMode,
    prefix: Option<PrefixFile>,
    role: PrefixRole,
    min: Option<usize>,
    max: Option<usize>,
}

/// A built prompt before it becomes a `Prompt`.
enum Built {
    Text(String),
    Messages(Vec<Value>),
}

pub(crate) fn materialize(
    select: &FileSelect,
    ctx: &DatasetContext,
    measure: &Measure,
    set: SourceSet,
) -> Result<Materialized, DatasetError> {
    let mut warnings = Vec::new();
    let shaping = Shaping::new(select, ctx, measure, &mut warnings)?;
    let mut order: Vec<usize> = (0..set.candidates.len()).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(ctx.seed));
    let mut accepted: Vec<PromptItem> = Vec::new();
    let mut filtered_out = 0;
    let mut body_seen = false;
    for index in order {
        if accepted.len() >= ctx.end() {
            break;
        }
        let candidate = &set.candidates[index];
        body_seen |= matches!(candidate.source, Source::Body(_));
        let located = |e: DatasetError| locate(e, &set, candidate.line);
        match shaping.item(candidate).map_err(located)? {
            Some(item) => accepted.push(item),
            None => filtered_out += 1,
        }
    }
    if accepted.is_empty() && ctx.count > 0 {
        return Err(DatasetError::AllFiltered {
            path: set.path.clone(),
            detail: shaping.describe(set.candidates.len()),
        });
    }
    let distinct_prompts = accepted.len();
    if set.warn_on_cycle && distinct_prompts < ctx.end() {
        warnings.push(format!(
            "{} gives {distinct_prompts} usable prompts for {} requests: prompts repeat",
            set.path.display(),
            ctx.end()
        ));
    }
    if body_seen && measure.mode() == Mode::TokenIds {
        warnings.push(
            "whole request bodies are sent as written: `tokenize_prompt` does not apply to them"
                .into(),
        );
    }
    let stats = DatasetStats {
        source_prompts: set.candidates.len(),
        filtered_out,
        distinct_prompts,
        ..DatasetStats::default()
    };
    Ok(cycle_to(accepted, ctx.range(), stats, warnings))
}

/// Items `range` of the endless cycle through `accepted`, with the miss statistics filled in.
fn cycle_to(
    accepted: Vec<PromptItem>,
    range: std::ops::Range<usize>,
    mut stats: DatasetStats,
    warnings: Vec<String>,
) -> Materialized {
    let mut items = Vec::with_capacity(range.len());
    if !accepted.is_empty() {
        items.extend(range.map(|i| accepted[i % accepted.len()].clone()));
    }
    record_misses(&items, &mut stats);
    Materialized {
        items,
        warnings,
        stats,
    }
}

/// Puts the file and line on errors about one prompt.
fn locate(e: DatasetError, set: &SourceSet, line: usize) -> DatasetError {
    match e {
        DatasetError::Invalid(message) => DatasetError::Line {
            path: set.path.clone(),
            line,
            message,
        },
        located @ (DatasetError::Line { .. } | DatasetError::At { .. }) => located,
        other => DatasetError::At {
            path: set.path.clone(),
            line,
            source: Box::new(other),
        },
    }
}

impl<'a> Shaping<'a> {
    fn new(
        select: &FileSelect,
        ctx: &DatasetContext,
        measure: &'a Measure,
        warnings: &mut Vec<String>,
    ) -> Result<Shaping<'a>, DatasetError> {
        let target = select.target_input_len.map(|t| t as usize);
        if target == Some(0) {
            return Err(DatasetError::Invalid(
                "target_input_len must be at least 1".into(),
            ));
        }
        if let Some(what) = select.needs_tokenizer() {
            measure.require(what)?;
        }
        let role = select.prefix_role;
        let prefix = match (&select.prefix_file, target) {
            (None, _) => None,
            (Some(_), None) => return Err(DatasetError::Invalid(
                "`prefix_file` needs `target_input_len` (the length every request is filled to)"
                    .into(),
            )),
            (Some(file), Some(target)) => {
                let tok = measure.require("`prefix_file`")?;
                let (prefix, warning) = PrefixFile::load(&resolve(ctx, file), tok, target)?;
                warnings.extend(warning);
                if role == PrefixRole::System && !matches!(measure.mode(), Mode::Chat { .. }) {
                    warnings.push(
                        "prefix_role = \"system\" needs a chat API: the prefix is put before the \
                         prompt text instead"
                            .into(),
                    );
                }
                Some(prefix)
            }
        };
        Ok(Shaping {
            measure,
            target,
            mode: select.input_len_mode,
            prefix,
            role,
            min: select.min_input_tokens.map(|n| n as usize),
            max: select.max_input_tokens.map(|n| n as usize),
        })
    }

    fn describe(&self, prompts: usize) -> String {
        let mut parts = vec![format!("{prompts} prompts")];
        parts.extend(self.min.map(|n| format!("min_input_tokens {n}")));
        parts.extend(self.max.map(|n| format!("max_input_tokens {n}")));
        if let (Some(t), InputLenMode::Drop) = (self.target, self.mode) {
            parts.push(format!("input_len_mode drop below target_input_len {t}"));
        }
        parts.join(", ")
    }

    fn passes(&self, count: Option<usize>) -> bool {
        let Some(n) = count else { return true };
        self.min.is_none_or(|min| n >= min) && self.max.is_none_or(|max| n <= max)
    }

    /// The item of one candidate, or `None` when a filter removes it.
    fn item(&self, c: &Candidate) -> Result<Option<PromptItem>, DatasetError> {
        let shaped = match &c.source {
            Source::Text(text) => self.text_item(text)?,
            Source::Messages(messages) => {
                self.whole_only("a `messages` prompt")?;
                let m = self.measure.messages(messages)?;
                if !self.passes(m.count) {
                    return Ok(None);
                }
                let (prompt, count) = self.measure.finish_messages(messages.clone(), m)?;
                Some((prompt, count, None))
            }
            Source::Body(body) => {
                self.whole_only("a whole request body")?;
                let count = self.body_count(body)?;
                if !self.passes(count) {
                    return Ok(None);
                }
                Some((Prompt::Body(body.clone()), count.map(to_u32), None))
            }
        };
        let Some((prompt, client_input_tokens, target_input_tokens)) = shaped else {
            return Ok(None);
        };
        let output_tokens = match &c.answer {
            Some(answer) => self.measure.content(answer)?.map(to_u32),
            None => None,
        };
        Ok(Some(PromptItem {
            prompt,
            target_input_tokens,
            client_input_tokens,
            output_tokens,
            class: None,
        }))
    }

    fn whole_only(&self, what: &str) -> Result<(), DatasetError> {
        if self.target.is_some() {
            return Err(DatasetError::Invalid(format!(
                "`target_input_len` and `prefix_file` apply to text prompts, not to {what}"
            )));
        }
        Ok(())
    }

    fn body_count(&self, body: &Map<String, Value>) -> Result<Option<usize>, DatasetError> {
        let Some(tok) = self.measure.tokenizer() else {
            return Ok(None);
        };
        if let Some(Value::Array(messages)) = body.get("messages") {
            if tok.has_chat_template() {
                return Ok(Some(
                    tok.count(&self.measure.render(tok, messages)?, false)?,
                ));
            }
            return Ok(None);
        }
        match body.get("prompt") {
            Some(Value::String(p)) => Ok(Some(tok.count(p, true)?)),
            _ => Ok(None),
        }
    }

    /// A text prompt with the length rules applied: (prompt, client count, target).
    #[expect(
        clippy::type_complexity,
        reason = "a triple named by its doc line, used once"
    )]
    fn text_item(
        &self,
        text: &str,
    ) -> Result<Option<(Prompt, Option<u32>, Option<u32>)>, DatasetError> {
        let alone = self.measure.text(text)?;
        if !self.passes(alone.count) {
            return Ok(None);
        }
        let (Some(target), Some(c0)) = (self.target, alone.count) else {
            let (prompt, count) = self.measure.finish_text(text.to_string(), alone);
            return Ok(Some((prompt, count, None)));
        };
        let built = if c0 > target {
            self.cap(text, target, c0)?
        } else if c0 < target && self.mode == InputLenMode::Drop {
            return Ok(None);
        } else if let (Some(prefix), true) = (&self.prefix, c0 < target) {
            self.fill(prefix, text, target, c0)?
        } else {
            (Built::Text(text.to_string()), alone)
        };
        let (prompt, count) = match built {
            (Built::Text(t), m) => self.measure.finish_text(t, m),
            (Built::Messages(ms), m) => self.measure.finish_messages(ms, m)?,
        };
        let target = (c0 >= target || self.prefix.is_some()).then_some(to_u32(target));
        Ok(Some((prompt, count, target)))
    }

    /// Cuts `text` so that it counts `target` tokens.
    fn cap(&self, text: &str, target: usize, c0: usize) -> Result<(Built, Measured), DatasetError> {
        let tok = self.measure.require("`target_input_len`")?;
        let ends: Vec<usize> = tok
            .encode_with_offsets(text, false)?
            .into_iter()
            .map(|(_, (_, end))| end)
            .collect();
        let overhead = c0.saturating_sub(ends.len());
        let fitted = fit(target, target.saturating_sub(overhead), ends.len(), |k| {
            let cut = cut_text(text, &ends, k);
            let m = self.measure.text(cut)?;
            Ok((m.count.unwrap_or(0), (cut.to_string(), m)))
        })?;
        let (cut, m) = fitted.value;
        Ok((Built::Text(cut), m))
    }

    /// Puts the first tokens of the prefix file before `text` so that it counts `target`.
    fn fill(
        &self,
        prefix: &PrefixFile,
        text: &str,
        target: usize,
        c0: usize,
    ) -> Result<(Built, Measured), DatasetError> {
        let marked = self.compose(MARKER, text);
        let fast = match &marked {
            Built::Text(t) => fast_fill(self.measure, prefix, Marked::Text(t), target)?,
            Built::Messages(ms) => fast_fill(self.measure, prefix, Marked::Messages(ms), target)?,
        };
        if let Some((k, measured)) = fast {
            return Ok((self.compose(prefix.cut(k), text), measured));
        }
        let fitted = fit(target, target - c0, prefix.len(), |k| {
            let built = self.compose(prefix.cut(k), text);
            let m = match &built {
                Built::Text(t) => self.measure.text(t)?,
                Built::Messages(ms) => self.measure.messages(ms)?,
            };
            Ok((m.count.unwrap_or(0), (built, m)))
        })?;
        Ok(fitted.value)
    }

    fn compose(&self, prefix: &str, text: &str) -> Built {
        let chat = matches!(self.measure.mode(), Mode::Chat { .. });
        if chat && self.role == PrefixRole::System {
            return Built::Messages(vec![system_message(prefix), user_message(text)]);
        }
        if prefix.is_empty() {
            return Built::Text(text.to_string());
        }
        Built::Text(format!("{prefix}{JOINER}{text}"))
    }
}
