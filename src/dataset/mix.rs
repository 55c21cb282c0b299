//! `kind = "mix"`: each request of a run drawn from one of its weighted classes, every
//! class's prompts from its own dataset. Request `i`'s class is a seeded draw by index
//! (the one weighted draw of `prefix_groups::group_of`), so it is the same whether a
//! run's requests are built before it or as they are sent; the class's prompts come in
//! order from the class's own `PromptStream`, with its own context (seed, tokenizer,
//! chat template: a class may name another model). Each item carries its class.

use super::prefix_groups::group_of;
use super::{DatasetContext, DatasetError, DatasetStats, PromptItem, PromptStream};
use crate::plan::mix_spec::MixAssign;
use crate::plan::prefix_groups::PrefixGroups;
use crate::plan::MixPlan;

/// Salt of the class draw (apart from every other draw of the run's seed).
const CLASS_DRAW_SALT: u64 = 0x6d69_785f_636c_6173;

/// The classes of request `index`..: which class each request takes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassDraw {
    weights: PrefixGroups,
    seed: u64,
    /// `assign = "round_robin"`: request `i` takes class `i mod classes`.
    round_robin: bool,
}

impl ClassDraw {
    pub fn new(plan: &MixPlan, seed: u64) -> ClassDraw {
        ClassDraw {
            weights: PrefixGroups {
                count: plan.classes.len().max(1) as u32,
                weights: plan.classes.iter().map(|c| c.weight).collect(),
            },
            seed: seed ^ CLASS_DRAW_SALT,
            round_robin: plan.assign == MixAssign::RoundRobin,
        }
    }

    /// The class of request `index`.
    pub(crate) fn class_of(&self, index: usize) -> usize {
        if self.round_robin {
            return index % self.weights.count.max(1) as usize;
        }
        group_of(&self.weights, self.seed, index)
    }
}

/// A mix's prompts, produced in order.
#[derive(Debug)]
pub(crate) struct MixStream {
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
    pub(crate) fn next_window(&mut self, n: usize) -> Result<Vec<PromptItem>, DatasetError> {
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
    pub(crate) fn take_warnings(&mut self) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Prompt;
    use crate::plan::{DatasetPlan, FileSelect, MixClassPlan};

    fn class(name: &str, weight: f64) -> MixClassPlan {
        MixClassPlan {
            name: name.into(),
            weight,
            dataset: DatasetPlan::Prompt {
                text: format!("prompt of {name}"),
                select: FileSelect::default(),
            },
        }
    }

    fn text(item: &PromptItem) -> String {
        match &item.prompt {
            Prompt::Text(t) => t.clone(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn classes_are_drawn_by_weight_and_the_same_in_any_window() {
        let plan = MixPlan {
            classes: vec![class("a", 0.7), class("b", 0.2), class("c", 0.1)],
            ..MixPlan::default()
        };
        let ctx = DatasetContext {
            seed: 5,
            count: 2000,
            classes: vec![DatasetContext::default(); 3],
            ..DatasetContext::default()
        };
        let all = materialize(&plan, &ctx).unwrap().items;
        assert_eq!(all.len(), 2000);
        let mut counts = [0usize; 3];
        for item in &all {
            let c = usize::from(item.class.unwrap());
            counts[c] += 1;
            assert_eq!(text(item), format!("prompt of {}", plan.classes[c].name));
        }
        for (n, w) in counts.iter().zip([0.7, 0.2, 0.1]) {
            let share = *n as f64 / 2000.0;
            assert!((share - w).abs() < 0.03, "{counts:?}");
        }
        // Built window by window (as a run's requests are built as they are sent).
        let mut stream = MixStream::new(&plan, &ctx);
        let mut windows = Vec::new();
        for n in [1, 7, 256, 1736] {
            windows.extend(stream.next_window(n).unwrap());
        }
        assert_eq!(windows, all);
        // Items from the middle on are the same items.
        let tail = materialize(
            &plan,
            &DatasetContext {
                first: 1500,
                count: 500,
                ..ctx.clone()
            },
        )
        .unwrap()
        .items;
        assert_eq!(tail, all[1500..]);
        // Another seed draws other classes.
        let other = materialize(&plan, &DatasetContext { seed: 6, ..ctx }).unwrap();
        let classes = |items: &[PromptItem]| items.iter().map(|i| i.class).collect::<Vec<_>>();
        assert_ne!(classes(&other.items), classes(&all));
    }

    #[test]
    fn round_robin_cycles_the_classes_in_order_in_any_window() {
        let plan = MixPlan {
            classes: vec![class("a", 1.0), class("b", 1.0), class("c", 1.0)],
            assign: MixAssign::RoundRobin,
        };
        let ctx = DatasetContext {
            seed: 5,
            count: 10,
            classes: vec![DatasetContext::default(); 3],
            ..DatasetContext::default()
        };
        let all = materialize(&plan, &ctx).unwrap().items;
        let classes: Vec<u16> = all.iter().map(|i| i.class.unwrap()).collect();
        assert_eq!(classes, [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]);
        // From the middle on (a shard's window, built as sent): the same global order.
        let tail = materialize(
            &plan,
            &DatasetContext {
                first: 7,
                count: 3,
                ..ctx.clone()
            },
        );
        let tail: Vec<u16> = tail
            .unwrap()
            .items
            .iter()
            .map(|i| i.class.unwrap())
            .collect();
        assert_eq!(tail, [1, 2, 0]);
        // The seed does not move it.
        let other = materialize(&plan, &DatasetContext { seed: 6, ..ctx })
            .unwrap()
            .items;
        assert_eq!(
            other.iter().map(|i| i.class.unwrap()).collect::<Vec<_>>(),
            classes
        );
    }

    #[test]
    fn a_mix_without_its_class_contexts_is_an_error_not_a_panic() {
        let plan = MixPlan {
            classes: vec![class("a", 1.0)],
            ..MixPlan::default()
        };
        let err = materialize(&plan, &DatasetContext::default()).unwrap_err();
        assert!(err.to_string().contains("1 classes"), "{err}");
    }
}
