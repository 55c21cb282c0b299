//! Session ids: the one rule that names the session of a request, sent in the endpoint's
//! `session_header` and used by `balance = "session"`. A session is a conversation of a
//! multi-turn run, or a group of a single-turn run's items (today each item is its own
//! group; prefix groups feed their group number through `item_group`).
//!
//! The id is a hash of the plan's seed and the group, so the same conversation or group
//! has the same id in every run of a suite (a router pins it to one replica, warm
//! priming and measured passes alike) and no secret goes into it.

/// The session id of group `group` under the plan's `seed`.
pub fn session_key(seed: u64, group: u64) -> u64 {
    use crate::engine::balance::mix64;
    mix64(mix64(seed ^ 0x7365_7373_696f_6e73) ^ group)
}

/// The session group of single-turn item `item`: the item itself until prefix groups say
/// which shared prefix it draws (the hook for `prefix_groups`: return its group number).
pub fn item_group(item: u64) -> u64 {
    item
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
    }
}
