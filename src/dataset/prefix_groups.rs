//! A `random` run's prefix groups (`prefix_groups`, `prefix_weights`): which group each
//! request takes, each group's shared prefix, and what the run's prompts share as the
//! server sees them (`Sharing`, the planned hit ratio's inputs). Request `i`'s group is
//! `i mod N` (round robin) without weights; with weights it is drawn from its own ChaCha
//! stream of the run seed, so it depends on neither the request count nor the threads.
//! Group 0's prefix is stream 0 of the run seed, as the one prefix was before groups
//! existed (one group builds the same bytes); group `g > 0` uses stream `u64::MAX - g`
//! (requests use streams from 1 up).

use std::ops::Range;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fit::fit;
use super::measure::{to_u32, Measure};
use super::DatasetError;
use crate::plan::dataset_plan::PrefixGroups;
use crate::tokenize::{Tokenizer, WordPool};

/// Mixed into the run seed for the weighted group draw ("prefixes").
const GROUP_DRAW_SALT: u64 = 0x7072_6566_6978_6573;

/// The group of request `index` of a run with `seed`.
pub fn group_of(groups: &PrefixGroups, seed: u64, index: usize) -> usize {
    let count = groups.count.max(1) as usize;
    if count == 1 {
        return 0;
    }
    let total: f64 = groups.weights.iter().sum();
    if groups.weights.len() != count || !(total.is_finite() && total > 0.0) {
        return index % count;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ GROUP_DRAW_SALT);
    rng.set_stream(index as u64);
    let mut left = rng.gen::<f64>() * total;
    for (g, w) in groups.weights.iter().enumerate() {
        if left < *w {
            return g;
        }
        left -= w;
    }
    count - 1
}

/// The groups requests `range` take, each once, in increasing order.
pub(crate) fn groups_in(groups: &PrefixGroups, seed: u64, range: Range<usize>) -> Vec<usize> {
    let count = groups.count.max(1) as usize;
    let mut used = vec![false; count];
    let mut left = count;
    for i in range {
        let g = group_of(groups, seed, i);
        if !used[g] {
            used[g] = true;
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    (0..count).filter(|g| used[*g]).collect()
}

/// The ChaCha stream of the run seed that group `g`'s prefix words come from.
fn prefix_stream(g: usize) -> u64 {
    if g == 0 {
        0
    } else {
        u64::MAX - g as u64
    }
}

/// Group `g`'s shared words: exactly `tokens` tokens of bare content (the server sees them
/// after the chat template's opening or BOS, which every prompt shares too).
pub(crate) fn group_prefix(
    tok: &Tokenizer,
    pool: &WordPool,
    seed: u64,
    g: usize,
    tokens: u32,
) -> Result<String, DatasetError> {
    if tokens == 0 {
        return Ok(String::new());
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(prefix_stream(g));
    let target = tokens as usize;
    let mut words = Vec::new();
    let fitted = fit(target, target, target * 2 + 16, |k| {
        super::random::draw(&mut words, k, pool, &mut rng);
        let text = super::random::compose("", &words[..k], pool, true);
        Ok((tok.count(&text, false)?, text))
    })?;
    Ok(fitted.value)
}

/// What a run's prompts share as the server sees them: the fixed opening every prompt
/// starts with (chat template up to the user text, or BOS), and each group's whole shared
/// prefix (that opening included), measured with the run's tokenizer.
#[derive(Debug, Clone, PartialEq)]
pub struct Sharing {
    /// Tokens of the fixed opening (`planned_template_share`'s part).
    pub lead: u32,
    /// Per group: tokens its prompts share (the opening plus the group's words).
    pub prefixes: Vec<u32>,
    groups: PrefixGroups,
    seed: u64,
}

impl Sharing {
    /// The sharing of prompts opening with `lead` tokens, group `g`'s sharing
    /// `prefixes[g]` tokens (its opening included), grouped by `groups` for `seed`.
    pub fn new(lead: u32, prefixes: Vec<u32>, groups: PrefixGroups, seed: u64) -> Sharing {
        Sharing {
            lead,
            prefixes,
            groups,
            seed,
        }
    }

    /// The group of request `item`.
    pub fn group_of(&self, item: usize) -> usize {
        group_of(&self.groups, self.seed, item)
    }

    /// Tokens the prompts of group `g` share.
    pub fn prefix(&self, g: usize) -> u32 {
        self.prefixes.get(g).copied().unwrap_or(self.lead)
    }
}

/// The `Sharing` of a `random` dataset: every group's prefix built as `materialize`
/// builds it, and counted.
pub(crate) fn sharing(
    prefix_tokens: u32,
    groups: &PrefixGroups,
    seed: u64,
    measure: &Measure,
) -> Result<Sharing, DatasetError> {
    let tok = measure.require("dataset kind `random`")?;
    let pool = super::random::word_pool(tok)?;
    let lead = to_u32(measure.lead_tokens()?);
    let words = prefix_tokens.saturating_sub(lead);
    let mut prefixes = Vec::with_capacity(groups.count as usize);
    for g in 0..groups.count.max(1) as usize {
        let text = group_prefix(tok, pool, seed, g, words)?;
        prefixes.push(lead + to_u32(tok.count(&text, false)?));
    }
    Ok(Sharing {
        lead,
        prefixes,
        groups: groups.clone(),
        seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_without_weights_and_the_weights_drawn_otherwise() {
        let even = PrefixGroups {
            count: 4,
            weights: Vec::new(),
        };
        let taken: Vec<usize> = (0..8).map(|i| group_of(&even, 7, i)).collect();
        assert_eq!(taken, [0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(group_of(&PrefixGroups::default(), 7, 99), 0);
        let weighted = PrefixGroups {
            count: 2,
            weights: vec![3.0, 1.0],
        };
        let n = 4000;
        let first = (0..n).filter(|&i| group_of(&weighted, 7, i) == 0).count();
        // 3:1 within a few standard deviations (sd of the share is about 0.007 here).
        assert!((first as f64 / n as f64 - 0.75).abs() < 0.03, "{first}");
        // Deterministic from the seed; another seed draws otherwise.
        let a: Vec<usize> = (0..64).map(|i| group_of(&weighted, 7, i)).collect();
        let b: Vec<usize> = (0..64).map(|i| group_of(&weighted, 8, i)).collect();
        assert_eq!(
            a,
            (0..64)
                .map(|i| group_of(&weighted, 7, i))
                .collect::<Vec<_>>()
        );
        assert_ne!(a, b);
        assert_eq!(groups_in(&even, 7, 5..7), [1, 2]);
        assert_eq!(groups_in(&even, 7, 0..100), [0, 1, 2, 3]);
    }
}
