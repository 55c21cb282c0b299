//! The planned hit ratio of a run, counted as the server sees its prompts: the tokens each
//! measured prompt shares with a prompt sent before it in the run, over all their prompt
//! tokens (`planned_prefix_share`), and the chat template's fixed opening's part of that
//! alone (`planned_template_share`). Folded record by record over the same requests the
//! measured `cache_hit_ratio` reads (measured, successful), from each request's own token
//! count as the client built it (`client_input_tokens`) and the dataset's `Sharing`:
//!
//! - cold run: request `i > 0` shares the opening (every prompt starts with it) and, when
//!   an earlier request (`j < i`, warmup included) took its prefix group, that group's
//!   whole prefix; request 0 shares nothing. "Earlier" is the send order: a first wave
//!   sent at once (concurrency) can find less cached than this counts.
//! - warm run: the priming pass sent every measured prompt before, whole.
//!
//! - a mix: each class as above by its requests' indices within the class (its own
//!   prompts, groups and seed), summed over the classes; a class's first request counts
//!   nothing shared, though another class's request may have sent the same opening.
//!
//! - a public trace (Mooncake's `hash_ids`): what each request shares with those before
//!   it, counted as its prompt was built (its leading blocks sent before, whole or as
//!   long as they were sent), in send order.
//!
//! `None` for datasets whose sharing perfplan does not build (every kind but `random`,
//! and a mix with a class of another kind).
//!
//! A server caches a prompt in whole blocks (vLLM: 16 tokens by default, 128 on its CPU
//! build), and never its last token: where the block size is known (the endpoint's
//! `cache_block_size`, else `vllm:cache_config_info` on its `/metrics`) a request's
//! shared tokens count as the whole blocks they fill within all but its last token, so a
//! 64-token shared prefix on a server of 128-token blocks is planned as 0, not as a
//! shortfall the server will never close.

use std::collections::HashMap;

use crate::dataset::mix::ClassDraw;
use crate::dataset::{RunSharing, Sharing};
use crate::plan::dataset_plan::PrefixGroups;
use crate::record::{Outcome, Phase, RequestRecord};

/// The planned shares of a run, folded from its records.
#[derive(Debug)]
pub(crate) struct PlannedWatch {
    warm: bool,
    kind: Option<Kind>,
}

/// How a request's shared tokens count as the server caches them.
#[derive(Debug, Clone, Copy)]
struct Blocks(Option<u32>);

impl Blocks {
    /// Of a `tokens`-long prompt whose first `shared` tokens were sent before: the whole
    /// blocks they fill within all but its last token (all of them when unknown).
    fn cached(self, shared: u64, tokens: u64) -> u64 {
        match self.0.filter(|b| *b > 0) {
            None => shared,
            Some(b) => {
                let b = u64::from(b);
                shared.min(tokens.saturating_sub(1)) / b * b
            }
        }
    }
}

#[derive(Debug)]
enum Kind {
    One(GroupWatch),
    Mix(MixWatch),
}

/// The planned shares of one dataset's prompts, by each prompt's index in it.
#[derive(Debug)]
struct GroupWatch {
    sharing: Sharing,
    /// A public trace: each request's shared tokens, counted as its prompts were built
    /// (the groups of `sharing` are not used).
    listed: Option<Vec<u32>>,
    blocks: Blocks,
    /// Per group: the first request (index) that takes it, found up to `scanned`.
    first_use: Vec<Option<u64>>,
    scanned: u64,
    shared: u64,
    template: u64,
    total: u64,
}

/// A mix: each class's watch, fed each request by its index within its class (the
/// order its class's prompts were built in). The run's items are walked in order once,
/// each given its class and index; an item's entry waits in `pending` until its record
/// comes (every item sent ends in one record, so it holds the requests in flight).
#[derive(Debug)]
struct MixWatch {
    draw: ClassDraw,
    classes: Vec<GroupWatch>,
    counts: Vec<u64>,
    scanned: u64,
    pending: HashMap<u64, (usize, u64)>,
}

/// A run's planned shares (`None` where the dataset's sharing is not planned).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Planned {
    pub prefix_share: Option<f64>,
    pub template_share: Option<f64>,
}

impl PlannedWatch {
    pub fn new(sharing: Option<RunSharing>, warm: bool) -> PlannedWatch {
        let kind = sharing.map(|s| match s {
            RunSharing::One(one) => Kind::One(GroupWatch::new(one)),
            RunSharing::Trace(trace) => {
                let lead = Sharing::new(trace.lead, Vec::new(), PrefixGroups::default(), 0);
                Kind::One(GroupWatch {
                    listed: Some(trace.shared),
                    ..GroupWatch::new(lead)
                })
            }
            RunSharing::Mix { draw, classes } => Kind::Mix(MixWatch {
                draw,
                counts: vec![0; classes.len()],
                classes: classes.into_iter().map(GroupWatch::new).collect(),
                scanned: 0,
                pending: HashMap::new(),
            }),
        });
        PlannedWatch { warm, kind }
    }

    /// Counts shared tokens in whole blocks of `block_size` tokens (when known).
    pub(crate) fn with_block_size(mut self, block_size: Option<u32>) -> PlannedWatch {
        let blocks = Blocks(block_size);
        match &mut self.kind {
            Some(Kind::One(one)) => one.blocks = blocks,
            Some(Kind::Mix(mix)) => mix.classes.iter_mut().for_each(|c| c.blocks = blocks),
            None => {}
        }
        self
    }

    pub fn add(&mut self, r: &RequestRecord) {
        let warm = self.warm;
        let (watch, index) = match &mut self.kind {
            None => return,
            Some(Kind::One(one)) => (one, r.item),
            Some(Kind::Mix(mix)) => {
                // Every record clears its item's entry, whatever its outcome.
                let Some((class, index)) = mix.place(r.item) else {
                    return;
                };
                match mix.classes.get_mut(class) {
                    Some(watch) => (watch, index),
                    None => return,
                }
            }
        };
        if r.outcome != Outcome::Ok || r.phase != Phase::Measured {
            return;
        }
        if let Some(tokens) = r.client_input_tokens {
            watch.add(index, u64::from(tokens), warm);
        }
    }

    /// The run's planned shares (a mix's over all its classes).
    pub fn planned(&self) -> Planned {
        match &self.kind {
            None => Planned::default(),
            Some(Kind::One(one)) => one.planned(),
            Some(Kind::Mix(mix)) => {
                let sum = |f: fn(&GroupWatch) -> u64| mix.classes.iter().map(f).sum::<u64>();
                ratios(sum(|w| w.shared), sum(|w| w.template), sum(|w| w.total))
            }
        }
    }

    /// A mix class's own planned shares (none for any other run).
    pub(crate) fn class_planned(&self, class: usize) -> Planned {
        match &self.kind {
            Some(Kind::Mix(mix)) => mix
                .classes
                .get(class)
                .map_or_else(Planned::default, GroupWatch::planned),
            _ => Planned::default(),
        }
    }
}

fn ratios(shared: u64, template: u64, total: u64) -> Planned {
    let ratio = |part: u64| (total > 0).then(|| part as f64 / total as f64);
    Planned {
        prefix_share: ratio(shared),
        template_share: ratio(template),
    }
}

impl MixWatch {
    /// Item `item`'s class and index within it.
    fn place(&mut self, item: u64) -> Option<(usize, u64)> {
        while self.scanned <= item {
            let class = self.draw.class_of(self.scanned as usize);
            let count = self.counts.get_mut(class)?;
            self.pending.insert(self.scanned, (class, *count));
            *count += 1;
            self.scanned += 1;
        }
        self.pending.remove(&item)
    }
}

impl GroupWatch {
    fn new(sharing: Sharing) -> GroupWatch {
        GroupWatch {
            first_use: vec![None; sharing.prefixes.len()],
            sharing,
            listed: None,
            blocks: Blocks(None),
            scanned: 0,
            shared: 0,
            template: 0,
            total: 0,
        }
    }

    /// Request `index` (of this dataset's prompts), `tokens` long, measured and answered.
    fn add(&mut self, index: u64, tokens: u64, warm: bool) {
        let lead = u64::from(self.sharing.lead).min(tokens);
        self.total += tokens;
        let shared = if warm {
            tokens
        } else if let Some(listed) = &self.listed {
            let at = usize::try_from(index).unwrap_or(usize::MAX);
            u64::from(listed.get(at).copied().unwrap_or(0)).min(tokens)
        } else if index == 0 {
            return;
        } else {
            let group = self.sharing.group_of(index as usize);
            let prefix = u64::from(self.sharing.prefix(group)).min(tokens);
            match self.used_before(group, index) {
                true => prefix.max(lead),
                false => lead,
            }
        };
        let cached = self.blocks.cached(shared, tokens);
        self.shared += cached;
        self.template += lead.min(cached);
    }

    /// Whether a request before `index` took `group`: indices are scanned in order, each
    /// once over the run, never beyond the largest index asked about.
    fn used_before(&mut self, group: usize, index: u64) -> bool {
        while self.scanned < index && self.first_use.get(group).is_some_and(Option::is_none) {
            let g = self.sharing.group_of(self.scanned as usize);
            if let Some(slot) = self.first_use.get_mut(g) {
                slot.get_or_insert(self.scanned);
            }
            self.scanned += 1;
        }
        self.first_use
            .get(group)
            .copied()
            .flatten()
            .is_some_and(|first| first < index)
    }

    fn planned(&self) -> Planned {
        ratios(self.shared, self.template, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(item: u64, phase: Phase, tokens: u32) -> RequestRecord {
        RequestRecord {
            item,
            phase,
            client_input_tokens: Some(tokens),
            ..RequestRecord::default()
        }
    }

    fn fold(sharing: Sharing, warm: bool, records: &[RequestRecord]) -> Planned {
        let mut watch = PlannedWatch::new(Some(RunSharing::One(sharing)), warm);
        records.iter().for_each(|r| watch.add(r));
        watch.planned()
    }

    #[test]
    fn one_prefix_is_shared_by_every_request_after_the_first() {
        let one = Sharing::new(24, vec![512], PrefixGroups::default(), 1);
        let records: Vec<_> = (0..12).map(|i| rec(i, Phase::Measured, 1024)).collect();
        let p = fold(one.clone(), false, &records);
        assert_eq!(p.prefix_share, Some(11.0 * 512.0 / (12.0 * 1024.0)));
        assert_eq!(p.template_share, Some(11.0 * 24.0 / (12.0 * 1024.0)));
        // A warmup request sent first makes measured request 0's prefix seen already.
        let mut warmed = vec![rec(0, Phase::Warmup, 1024)];
        warmed.extend((1..13).map(|i| rec(i, Phase::Measured, 1024)));
        assert_eq!(fold(one.clone(), false, &warmed).prefix_share, Some(0.5));
        // Warm: every measured prompt was sent whole by the priming pass.
        let warm = fold(one, true, &records);
        assert_eq!(warm.prefix_share, Some(1.0));
        assert_eq!(warm.template_share, Some(24.0 / 1024.0));
    }

    #[test]
    fn each_group_shares_its_prefix_after_its_first_use_only() {
        let groups = PrefixGroups {
            count: 4,
            weights: Vec::new(),
        };
        let four = Sharing::new(10, vec![50; 4], groups, 1);
        let records: Vec<_> = (0..8).map(|i| rec(i, Phase::Measured, 100)).collect();
        // Items 1-3 open new groups (the opening alone), items 4-7 reuse theirs.
        let p = fold(four.clone(), false, &records);
        assert_eq!(p.prefix_share, Some((3.0 * 10.0 + 4.0 * 50.0) / 800.0));
        assert_eq!(p.template_share, Some(70.0 / 800.0));
        // Failed requests and other datasets count nothing.
        let failed = RequestRecord {
            outcome: Outcome::Http,
            ..rec(9, Phase::Measured, 100)
        };
        let with_failure: Vec<_> = records.iter().cloned().chain([failed]).collect();
        assert_eq!(fold(four, false, &with_failure), p);
        let mut none = PlannedWatch::new(None, false);
        records.iter().for_each(|r| none.add(r));
        assert_eq!(none.planned(), Planned::default());
    }

    /// A mix's planned shares are each class's, by its requests' indices within the
    /// class, whatever order the records come in.
    #[test]
    fn a_mix_plans_each_class_by_its_own_requests() {
        use crate::plan::{DatasetPlan, FileSelect, MixClassPlan, MixPlan};
        let class = |name: &str| MixClassPlan {
            name: name.into(),
            weight: 1.0,
            dataset: DatasetPlan::Prompt {
                text: String::new(),
                select: FileSelect::default(),
            },
        };
        let plan = MixPlan {
            classes: vec![class("a"), class("b")],
            ..MixPlan::default()
        };
        let draw = ClassDraw::new(&plan, 7);
        let a = Sharing::new(10, vec![50], PrefixGroups::default(), 1);
        let b = Sharing::new(10, vec![30], PrefixGroups::default(), 1);
        let sharing = RunSharing::Mix {
            draw: draw.clone(),
            classes: vec![a, b],
        };
        let records: Vec<_> = (0..20).map(|i| rec(i, Phase::Measured, 100)).collect();
        let n_a = (0..20).filter(|&i| draw.class_of(i) == 0).count() as f64;
        let n_b = 20.0 - n_a;
        assert!(n_a > 0.0 && n_b > 0.0);
        // Each class's first request shares nothing; its later ones share its prefix.
        let expected = ((n_a - 1.0) * 50.0 + (n_b - 1.0) * 30.0) / 2000.0;
        let mut watch = PlannedWatch::new(Some(sharing.clone()), false);
        records.iter().for_each(|r| watch.add(r));
        assert_eq!(watch.planned().prefix_share, Some(expected));
        assert_eq!(
            watch.class_planned(0).prefix_share,
            Some((n_a - 1.0) * 50.0 / (n_a * 100.0))
        );
        // Records in another order (requests in flight end out of order): the same.
        let mut shuffled = PlannedWatch::new(Some(sharing), false);
        for chunk in records.chunks(4) {
            chunk.iter().rev().for_each(|r| shuffled.add(r));
        }
        assert_eq!(shuffled.planned(), watch.planned());
        let Some(Kind::Mix(mix)) = &shuffled.kind else {
            panic!("a mix");
        };
        assert!(mix.pending.is_empty(), "every record cleared its item");
    }
}
