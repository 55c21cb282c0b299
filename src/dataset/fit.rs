//! Fitting a prompt to a token target: a prompt is built from its first `k` pieces (words,
//! tokens of a file), measured, and `k` moves by the miss until the count the server will
//! see equals the target or no better `k` exists. Also the miss bookkeeping of a run.

use super::{DatasetError, DatasetStats, PromptItem};

/// Most builds per prompt (the first or second is exact in practice).
const MAX_STEPS: usize = 8;

/// The best build found.
#[derive(Debug)]
pub(crate) struct Fitted<T> {
    pub count: usize,
    pub value: T,
}

/// Finds `k` in `0..=max_k` whose build counts `target` tokens, starting at `guess`.
/// `build(k)` returns the count and the built value. On no exact `k`, returns the closest
/// build (below the target on a tie).
pub(crate) fn fit<T>(
    target: usize,
    guess: usize,
    max_k: usize,
    mut build: impl FnMut(usize) -> Result<(usize, T), DatasetError>,
) -> Result<Fitted<T>, DatasetError> {
    let rank = |count: usize| (count.abs_diff(target), count > target);
    let mut k = guess.min(max_k);
    let mut tried: Vec<usize> = Vec::with_capacity(MAX_STEPS);
    let mut best: Option<Fitted<T>> = None;
    for _ in 0..MAX_STEPS {
        let (count, value) = build(k)?;
        tried.push(k);
        if best.as_ref().is_none_or(|b| rank(count) < rank(b.count)) {
            best = Some(Fitted { count, value });
        }
        if count == target {
            break;
        }
        let next = if count < target {
            k.saturating_add(target - count).min(max_k)
        } else {
            k.saturating_sub(count - target)
        };
        // A step that lands on a tried k would cycle; try its neighbour once instead.
        let next = if tried.contains(&next) {
            let nudge = if count < target {
                k.saturating_add(1).min(max_k)
            } else {
                k.saturating_sub(1)
            };
            if tried.contains(&nudge) {
                break;
            }
            nudge
        } else {
            next
        };
        k = next;
    }
    best.ok_or_else(|| DatasetError::Invalid("fitting a prompt made no attempt".into()))
}

/// Fills the target/miss statistics from the finished items.
pub(crate) fn record_misses(items: &[PromptItem], stats: &mut DatasetStats) {
    for item in items {
        let Some(target) = item.target_input_tokens else {
            continue;
        };
        stats.targeted += 1;
        if let Some(count) = item.client_input_tokens {
            let miss = count.abs_diff(target);
            if miss > 0 {
                stats.missed_target += 1;
                stats.max_abs_miss = stats.max_abs_miss.max(miss);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_by_the_miss_until_exact() {
        // count = 10 + k, with a bump of +1 once k > 50
        let f = fit(100, 80, 1000, |k| Ok((10 + k + usize::from(k > 50), k))).unwrap();
        assert_eq!(f.count, 100);
        assert_eq!(f.value, 89);
    }

    #[test]
    fn an_unreachable_target_gives_the_closest_build_below() {
        // counts jump by 2: 0, 2, 4, ...; target 5 is unreachable
        let f = fit(5, 0, 100, |k| Ok((2 * k, k))).unwrap();
        assert_eq!(f.count, 4);
    }

    #[test]
    fn max_k_bounds_the_search() {
        let f = fit(100, 10, 20, |k| Ok((k, k))).unwrap();
        assert_eq!(f.count, 20);
    }
}
