//! Repeats of a fixed load (`load = { ..., repeat = N }`): one run becomes N runs of a
//! group. The group's id is the id the run has without `repeat` (the key is taken out of
//! the settings before they are hashed, so `repeat = 1` or no `repeat` changes no id);
//! repeat k's id is derived from the group's id and k. Cold repeats get a request set of
//! their own (a seed derived from the run's and k; repeat 1 keeps the run's), warm ones
//! the same set, so a warm cache is warm for the prompts measured. Runs that differ only
//! by endpoint keep identical prompts repeat by repeat. Knows nothing about HTTP or storage.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::run::{RepeatOf, RunSpec};
use crate::plan::CacheState;

/// The axis that numbers a run's repeat (1-based).
pub(crate) const REPEAT_AXIS: &str = "repeat";

/// The id of repeat `k` of the group `group`.
pub(crate) fn repeat_id(group: &str, k: u32) -> String {
    let digest = Sha256::digest(format!("{group}/repeat={k}").as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The request-set seed of repeat `k` of a run whose seed is `seed`: the run's own for a
/// warm run and for repeat 1, a fresh one for every other cold repeat.
pub(crate) fn repeat_seed(seed: u64, k: u32, cache_state: CacheState) -> u64 {
    if k <= 1 || cache_state == CacheState::Warm {
        return seed;
    }
    let digest = Sha256::digest(format!("{seed}/repeat={k}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(bytes)
}

/// Takes `repeat` out of a load axis value (its label and match key are the group's).
pub(crate) fn strip_axis(axes: &mut serde_json::Map<String, Value>) {
    if let Some(Value::Object(load)) = axes.get_mut("load") {
        load.remove("repeat");
    }
}

/// The runs of `group` repeated `of` times (the group itself when `of` is 1), numbered
/// from `first_ordinal`.
pub fn repeats(group: RunSpec, of: u32, first_ordinal: usize) -> Vec<RunSpec> {
    if of <= 1 {
        return vec![RunSpec {
            ordinal: first_ordinal,
            ..group
        }];
    }
    (1..=of)
        .map(|k| {
            let mut run = group.clone();
            run.ordinal = first_ordinal + (k as usize - 1);
            run.id = repeat_id(&group.id, k);
            run.settings.repeat = Some(RepeatOf {
                group: group.id.clone(),
                k,
                of,
            });
            run.dataset_seed = repeat_seed(group.dataset_seed, k, group.settings.cache_state);
            run.axes.insert(REPEAT_AXIS.into(), Value::from(k));
            run
        })
        .collect()
}

/// The id of the group a run belongs to: its group's when repeated, else its own.
pub fn group_of(run: &RunSpec) -> &str {
    run.settings
        .repeat
        .as_ref()
        .map_or(run.id.as_str(), |r| r.group.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_seeds_are_stable() {
        // Golden values: a change here changes every repeated run's id or prompts.
        assert_eq!(repeat_id("0123456789ab", 1), repeat_id("0123456789ab", 1));
        assert_ne!(repeat_id("0123456789ab", 1), repeat_id("0123456789ab", 2));
        assert_eq!(repeat_id("0123456789ab", 2).len(), 12);
        assert_eq!(repeat_seed(7, 1, CacheState::Cold), 7);
        assert_eq!(repeat_seed(7, 3, CacheState::Warm), 7);
        let (two, three) = (
            repeat_seed(7, 2, CacheState::Cold),
            repeat_seed(7, 3, CacheState::Cold),
        );
        assert!(two != 7 && three != 7 && two != three);
        assert_eq!(two, repeat_seed(7, 2, CacheState::Cold));
    }
}
