//! `kind = "mix"`: each request of a run drawn from one of its weighted classes, every
//! class's prompts from its own dataset. Request `i`'s class is a seeded draw by index
//! (the one weighted draw of `prefix_groups::group_of`), so it is the same whether a
//! run's requests are built before it or as they are sent; the class's prompts come in
//! order from the class's own `PromptStream`, with its own context (seed, tokenizer,
//! chat template: a class may name another model). Each item carries its class.

use super::prefix_groups::group_of;
use super::{DatasetContext, DatasetError, DatasetStats, PromptItem, PromptStream};
use crate::plan::prefix_groups::PrefixGroups;
use crate::plan::MixPlan;

/// Salt of the class draw (apart from every other draw of the run's seed).
const CLASS_DRAW_SALT: u64 = 0x6d69_785f_636c_6173;

/// The classes of request `index`..: which class each request takes.
#[derive(Debug, Clone)]
pub struct ClassDraw {
    weights: PrefixGroups,
    seed: u64,
}

impl ClassDraw {
    pub fn new(plan: &MixPlan, seed: u64) -> ClassDraw {
        ClassDraw {
            weights: PrefixGroups {
                count: plan.classes.len().max(1) as u32,
                weights: plan.classes.iter().map(|c| c.weight).collect(),
            },
            seed: seed ^ CLASS_DRAW_SALT,
        }
    }

    /// The class of request `index`.
    pub fn class_of(&self, index: usize) -> usize {
        group_of(&self.weights, self.seed, index)
    }
}

/// A mix's prompts, produced in order.
#[derive(Debug)]
pub struct MixStream {
    draw: ClassDraw,
    names: Vec<String>,
    classes: Vec<PromptStream>,
    next: usize,
}

impl MixStream {
    /// The stream of a mix: `ctx.classes` holds each class's context, in order.
    pub fn new(plan: &MixPlan, ctx: &DatasetContext) -> MixStream {
        MixStream {
            draw: ClassDraw::new(plan, ctx.seed),
            names: plan.classes.iter().map(|c| c.name.clone()).collect(),
            classes: plan
                .classes
                .iter()
                .zip(&ctx.classes)
                .map(|(class, ctx)| PromptStream::new(&class.dataset, ctx))
                .collect(),
            next: 0,
        }
    }

    /// The next `n` items, each with its class. Fewer when a class has no more prompts
    /// (the window then ends before that class's first missing one).
    pub fn next_window(&mut self, n: usize) -> Result<Vec<PromptItem>, DatasetError> {
        if self.classes.len() != self.names.len() || self.classes.is_empty() {
            return Err(DatasetError::Invalid(format!(
                "a mix of {} classes was given {} class contexts",
                self.names.len(),
                self.classes.len()
            )));
        }
        let picks: Vec<usize> = (self.next..self.next.saturating_add(n))
            .map(|i| self.draw.class_of(i))
            .collect();
        let mut wanted = vec![0usize; self.classes.len()];
        for &c in &picks {
            wanted[c] += 1;
        }
        let mut drawn: Vec<std::vec::IntoIter<PromptItem>> = Vec::new();
        for (c, stream) in self.classes.iter_mut().enumerate() {
            let items = match wanted[c] {
                0 => Vec::new(),
                k => stream.next_window(k).map_err(|e| {
                    DatasetError::Invalid(format!("class `{}`: {e}", self.names[c]))
                })?,
            };
            drawn.push(items.into_iter());
        }
        let mut out = Vec::with_capacity(picks.len());
        for c in picks {
            let Some(mut item) = drawn[c].next() else {
                break;
            };
            item.class = Some(c as u16);
            out.push(item);
        }
        self.next += out.len();
        Ok(out)
    }

    /// Each class's fresh warnings, named by class.
    pub fn take_warnings(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, stream) in self.names.iter().zip(&mut self.classes) {
            out.extend(
                stream
                    .take_warnings()
                    .into_iter()
                    .map(|w| format!("class `{name}`: {w}")),
            );
        }
        out
    }

    /// The classes' stats, summed.
    pub fn stats(&self) -> DatasetStats {
        let mut sum = DatasetStats::default();
        for s in self.classes.iter().map(PromptStream::stats) {
            sum.targeted += s.targeted;
            sum.missed_target += s.missed_target;
            sum.max_abs_miss = sum.max_abs_miss.max(s.max_abs_miss);
            sum.source_prompts += s.source_prompts;
            sum.filtered_out += s.filtered_out;
            sum.distinct_prompts += s.distinct_prompts;
        }
        sum
    }
}

/// `materialize` of a mix: items `ctx.first ..` of its stream.
pub(super) fn materialize(
    plan: &MixPlan,
    ctx: &DatasetContext,
) -> Result<super::Materialized, DatasetError> {
    let mut stream = MixStream::new(plan, ctx);
    let mut items = stream.next_window(ctx.end())?;
    items.drain(..ctx.first.min(items.len()));
    Ok(super::Materialized {
        items,
        warnings: stream.take_warnings(),
        stats: stream.stats(),
    })
}
