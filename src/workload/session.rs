//! Session ids: the one rule that names the session of a request, sent in the endpoint's
//! `session_header` and used by `balance = "session"`. A session is a conversation of a
//! multi-turn run, or a group of a single-turn run's items: the prefix group an item
//! draws when its `random` dataset has `prefix_groups` (so a KV-aware router can pin a
//! system prompt's requests to the replica that caches it), else the item itself.
//!
//! The id is a hash of the plan's seed and the group, so the same conversation or group
//! has the same id in every run of a suite (a router pins it to one replica, warm
//! priming and measured passes alike) and no secret goes into it.

use crate::dataset::group_of;
use crate::plan::dataset_plan::PrefixGroups;
use crate::plan::DatasetPlan;
use crate::planner::RunSpec;

/// The session id of group `group` under the plan's `seed`.
pub(crate) fn session_key(seed: u64, group: u64) -> u64 {
    use crate::hash::mix64;
    mix64(mix64(seed ^ 0x7365_7373_696f_6e73) ^ group)
}

/// The session group of single-turn item `item` when its dataset has no prefix groups:
/// the item itself.
pub(crate) fn item_group(item: u64) -> u64 {
    item
}

/// How a run names its single-turn items' sessions: by the prefix group each draws
/// (`dataset::prefix_groups::group_of`, the one rule the prompts are built by) when its
/// `random` dataset has more than one, else by `item_group`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ItemGroups(Option<(PrefixGroups, u64)>);

impl ItemGroups {
    pub fn of(run: &RunSpec) -> ItemGroups {
        match &run.dataset {
            DatasetPlan::Random { groups, .. } if groups.count > 1 => {
                ItemGroups(Some((groups.clone(), run.dataset_seed)))
            }
            _ => ItemGroups(None),
        }
    }

    /// The session group of item `item`.
    pub fn group(&self, item: u64) -> u64 {
        match &self.0 {
            Some((groups, seed)) => group_of(groups, *seed, item as usize) as u64,
            None => item_group(item),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(session_key(42, 3), session_key(42, 3));
        assert_ne!(session_key(42, 3), session_key(42, 4));
        assert_ne!(session_key(42, 3), session_key(43, 3));
        // A golden value: routers pin by it, so it must not drift between releases.
        assert_eq!(
            crate::engine::session_id(session_key(42, 0)),
            "238d5fce7fcdf9d5"
        );
        // Without prefix groups an item is its own session.
        assert_eq!(ItemGroups::default().group(7), 7);
        let groups = PrefixGroups {
            count: 4,
            weights: Vec::new(),
        };
        let by_group = ItemGroups(Some((groups, 1)));
        assert_eq!(
            (0..8).map(|i| by_group.group(i)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 0, 1, 2, 3]
        );
    }
}
