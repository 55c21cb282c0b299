//! The target input length of each item, by item, as the plan asked for it: read when a
//! request is handed out (how prompts met their targets) and when its row is written. A
//! list built before the run keeps every item's; requests built as they are sent keep
//! only the items built and not yet written (`forget` after the write), so a long run
//! does not hold one per request.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

/// The targets of a run's items.
#[derive(Debug, Default)]
pub struct Targets(RwLock<Held>);

#[derive(Debug)]
enum Held {
    /// Every item's, by item (a list built before the run).
    List(Vec<Option<u32>>),
    /// The items built and not written yet (requests built as they are sent).
    Pending(HashMap<u64, u32>),
}

impl Default for Held {
    fn default() -> Self {
        Held::List(Vec::new())
    }
}

impl Targets {
    /// Every item's target, by item.
    pub fn new(targets: Vec<Option<u32>>) -> Targets {
        Targets(RwLock::new(Held::List(targets)))
    }

    /// Targets set as requests are built and forgotten once their rows are written.
    pub fn pending() -> Targets {
        Targets(RwLock::new(Held::Pending(HashMap::new())))
    }

    pub fn get(&self, item: u64) -> Option<u32> {
        match &*self.0.read().unwrap_or_else(PoisonError::into_inner) {
            Held::List(list) => list.get(item as usize).copied().flatten(),
            Held::Pending(map) => map.get(&item).copied(),
        }
    }

    /// Sets the targets of the items from `first` on.
    pub fn set(&self, first: usize, targets: impl IntoIterator<Item = Option<u32>>) {
        let mut held = self.0.write().unwrap_or_else(PoisonError::into_inner);
        for (k, t) in targets.into_iter().enumerate() {
            let i = first + k;
            match &mut *held {
                Held::List(list) => {
                    if list.len() <= i {
                        list.resize(i + 1, None);
                    }
                    list[i] = t;
                }
                Held::Pending(map) => {
                    match t {
                        Some(t) => map.insert(i as u64, t),
                        None => map.remove(&(i as u64)),
                    };
                }
            }
        }
    }

    /// The row of `item` is written: a run building its requests as they are sent no
    /// longer needs its target (a list keeps every item's).
    pub(crate) fn forget(&self, item: u64) {
        if let Held::Pending(map) = &mut *self.0.write().unwrap_or_else(PoisonError::into_inner) {
            map.remove(&item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_keeps_every_target_and_pending_ones_are_forgotten() {
        let list = Targets::new(vec![Some(5), None]);
        list.forget(0);
        assert_eq!(
            (list.get(0), list.get(1), list.get(9)),
            (Some(5), None, None)
        );
        let pending = Targets::pending();
        pending.set(3, [Some(7), None, Some(9)]);
        assert_eq!(
            (pending.get(3), pending.get(4), pending.get(5)),
            (Some(7), None, Some(9))
        );
        pending.forget(3);
        assert_eq!(pending.get(3), None);
        assert_eq!(pending.get(5), Some(9));
    }
}
