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
//! `None` for datasets whose sharing perfplan does not build (every kind but `random`).

use crate::dataset::Sharing;
use crate::record::{Outcome, Phase, RequestRecord};

/// The planned shares of a run, folded from its records.
#[derive(Debug)]
pub struct PlannedWatch {
    sharing: Option<Sharing>,
    warm: bool,
    /// Per group: the first request (item) that takes it, found up to `scanned`.
    first_use: Vec<Option<u64>>,
    scanned: u64,
    shared: u64,
    template: u64,
    total: u64,
}

/// A run's planned shares (`None` where the dataset's sharing is not planned).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Planned {
    pub prefix_share: Option<f64>,
    pub template_share: Option<f64>,
}

impl PlannedWatch {
    pub fn new(sharing: Option<Sharing>, warm: bool) -> PlannedWatch {
        let groups = sharing.as_ref().map_or(0, |s| s.prefixes.len());
        PlannedWatch {
            sharing,
            warm,
            first_use: vec![None; groups],
            scanned: 0,
            shared: 0,
            template: 0,
            total: 0,
        }
    }

    pub fn add(&mut self, r: &RequestRecord) {
        if r.outcome != Outcome::Ok || r.phase != Phase::Measured {
            return;
        }
        let (Some(sharing), Some(tokens)) = (&self.sharing, r.client_input_tokens) else {
            return;
        };
        let tokens = u64::from(tokens);
        let lead = u64::from(sharing.lead).min(tokens);
        self.total += tokens;
        if self.warm {
            self.shared += tokens;
            self.template += lead;
            return;
        }
        if r.item == 0 {
            return;
        }
        let group = sharing.group_of(r.item as usize);
        let prefix = u64::from(sharing.prefix(group)).min(tokens);
        let seen_before = self.used_before(group, r.item);
        self.template += lead;
        self.shared += if seen_before { prefix.max(lead) } else { lead };
    }

    /// Whether a request before `item` took `group`: items are scanned in order, each
    /// once over the run, never beyond the largest item asked about.
    fn used_before(&mut self, group: usize, item: u64) -> bool {
        let Some(sharing) = &self.sharing else {
            return false;
        };
        while self.scanned < item && self.first_use.get(group).is_some_and(Option::is_none) {
            let g = sharing.group_of(self.scanned as usize);
            if let Some(slot) = self.first_use.get_mut(g) {
                slot.get_or_insert(self.scanned);
            }
            self.scanned += 1;
        }
        self.first_use
            .get(group)
            .copied()
            .flatten()
            .is_some_and(|first| first < item)
    }

    /// The run's planned shares.
    pub fn planned(&self) -> Planned {
        let ratio = |part: u64| {
            (self.sharing.is_some() && self.total > 0).then(|| part as f64 / self.total as f64)
        };
        Planned {
            prefix_share: ratio(self.shared),
            template_share: ratio(self.template),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::plan::dataset_plan::PrefixGroups;

    fn rec(item: u64, phase: Phase, tokens: u32) -> RequestRecord {
        RequestRecord {
            item,
            phase,
            client_input_tokens: Some(tokens),
            ..RequestRecord::default()
        }
    }

    fn fold(sharing: Sharing, warm: bool, records: &[RequestRecord]) -> Planned {
        let mut watch = PlannedWatch::new(Some(sharing), warm);
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
}
