//! `run --shard K/N`: this process's share of every run's load, so that N client
//! machines together send exactly the plan's load. Owns the split arithmetic (counts,
//! rates, concurrency, request index bases), the shard's environment (`--shard auto` on
//! Kubernetes and Slurm, output folders) and the start instant (`--start-at`); the suite
//! selects a shard's requests with it. Knows nothing about HTTP or the database.
//!
//! Every shard prepares the whole run (same seed, same items) and keeps every Nth
//! request, starting at request K−1, separately for warmup, measured and priming
//! requests; so the shards' requests together are exactly the unsplit run's, and no two
//! shards send the same prompt. Counts split as evenly as possible (the first shards get
//! one more): 7 requests over 3 shards are 3 + 2 + 2. Closed loop: the concurrency splits
//! the same way; a concurrency C below N runs on the first C shards only. Open loop: the run's one arrival sequence is computed and every shard
//! sends every Nth arrival (rate / N each; their union is the plan's arrivals). Trace
//! replay: shard K replays records K−1, K−1+N, ….
//!
//! Request indexes: shard K stores its requests from `(K−1) · S` on, S being the number
//! of requests of the unsplit run, so `(run_id, request_index)` stays unique when the
//! shards' databases are merged. Run ids never depend on the shard.

use std::time::SystemTime;

use crate::planner::{Load, LoadShare, RunSpec};
use crate::record::RunFacts;

pub mod env;

pub use env::ShardChoice;

/// How this process takes part in a run split across machines (`run --shard`, `--start-at`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardOptions {
    /// This process's shard; `None` runs the whole load.
    pub shard: Option<Shard>,
    /// The first run's load (warmup, then measured) starts at this instant.
    pub start_at: Option<SystemTime>,
}

/// One shard of N: `k` in `1..=n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

/// Why `--shard` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --shard `{text}`: {reason}")]
pub struct ShardError {
    pub text: String,
    pub reason: &'static str,
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    /// `K/N` with `1 <= K <= N`.
    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let bad = |reason| ShardError {
            text: text.to_string(),
            reason,
        };
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| bad("write K/N, e.g. 2/4"))?;
        let k: u32 = k.trim().parse().map_err(|_| bad("K is not a number"))?;
        let n: u32 = n.trim().parse().map_err(|_| bad("N is not a number"))?;
        if n == 0 || k == 0 || k > n {
            return Err(bad("K must be between 1 and N"));
        }
        Ok(Shard { k, n })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl LoadShare for Shard {
    fn count(&self, total: u64) -> u64 {
        self.share(total)
    }

    fn rate(&self, rate: f64) -> f64 {
        self.share_rate(rate)
    }

    fn parts(&self) -> u32 {
        self.n
    }
}

impl Shard {
    /// This shard's part of `total` (floor or ceil of total / N; the parts sum to total).
    pub fn share(&self, total: u64) -> u64 {
        let (n, i) = (u64::from(self.n), u64::from(self.k - 1));
        total / n + u64::from(i < total % n)
    }

    /// This shard's part of an arrival rate.
    pub(crate) fn share_rate(&self, rate: f64) -> f64 {
        rate / f64::from(self.n)
    }

    /// Whether the shard takes item `i` of a list split every Nth.
    pub fn keeps(&self, i: usize) -> bool {
        i % self.n as usize == (self.k - 1) as usize
    }

    /// The first stored request index of this shard in a run of `total` requests.
    pub(crate) fn index_base(&self, total: u64) -> u64 {
        u64::from(self.k - 1) * total
    }

    /// This shard as it takes part in a run: a closed loop of concurrency C below N is
    /// split over the first C shards only (one slot each; the others have no share), so
    /// the shards that run it still send all of its requests. A concurrency ramp is split
    /// level by level (`RunSpec::shared`: a shard may hold no slot at a low level). An
    /// exploring load is not split (its next level is chosen from what it measured): the
    /// first shard runs all of it.
    pub fn within(&self, load: &Load) -> Result<Shard, String> {
        if let Load::Explore { .. } = load {
            if self.k > 1 {
                return Err(format!(
                    "shard {self} has no share of this run (an exploring load runs on the first shard only); skipped"
                ));
            }
            return Ok(Shard { k: 1, n: 1 });
        }
        let &Load::Closed { concurrency } = load else {
            return Ok(*self);
        };
        let n = self.n.min(concurrency.max(1));
        if self.k > n {
            return Err(format!(
                "shard {self} has no share of this run (concurrency {concurrency} over {} shards); skipped",
                self.n
            ));
        }
        Ok(Shard { k: self.k, n })
    }

    /// The run as this shard executes it: the same id and settings, its share of the load.
    pub(crate) fn share_run(&self, run: &RunSpec) -> Result<RunSpec, String> {
        run.shared(self)
    }
}

/// What a run's facts keep for `merge`: the shard, and the wall-clock start of the
/// measured pass (record times are offsets from it), in unix microseconds.
pub(crate) fn shard_facts(facts: &mut RunFacts, shard: Option<Shard>, started: SystemTime) {
    let us = started
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    facts.measured_start_unix_us = Some(us);
    if let Some(s) = shard {
        facts.shard = Some(Some(s.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(n: u32) -> Vec<Shard> {
        (1..=n).map(|k| Shard { k, n }).collect()
    }

    #[test]
    fn parses_k_of_n() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { k: 2, n: 4 }));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { k: 1, n: 3 }.to_string(), "1/3");
    }

    #[test]
    fn counts_split_evenly_first_shards_get_more() {
        let parts = |total, n| -> Vec<u64> { shards(n).iter().map(|s| s.share(total)).collect() };
        assert_eq!(parts(5, 2), vec![3, 2]);
        assert_eq!(parts(7, 3), vec![3, 2, 2]);
        assert_eq!(parts(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(parts(12, 4), vec![3, 3, 3, 3]);
        for total in 0..40 {
            for n in 1..7 {
                assert_eq!(parts(total, n).iter().sum::<u64>(), total);
            }
        }
    }

    #[test]
    fn rates_split_and_strides_partition() {
        for s in shards(4) {
            assert_eq!(s.share_rate(10.0), 2.5);
        }
        for i in 0..20 {
            assert_eq!(shards(3).iter().filter(|s| s.keeps(i)).count(), 1);
        }
        // A stride of 7 over 3 keeps as many as `share` says.
        for s in shards(3) {
            let kept = (0..7).filter(|i| s.keeps(*i)).count() as u64;
            assert_eq!(kept, s.share(7));
        }
    }

    #[test]
    fn a_closed_loop_below_n_runs_on_its_first_shards() {
        // Concurrency 1 over 2 shards: shard 1 takes all of it, shard 2 has no share.
        let first = Shard { k: 1, n: 2 }
            .within(&Load::Closed { concurrency: 1 })
            .unwrap();
        assert_eq!(first, Shard { k: 1, n: 1 });
        assert!(Shard { k: 2, n: 2 }
            .within(&Load::Closed { concurrency: 1 })
            .is_err());
        assert_eq!(
            Shard { k: 2, n: 4 }.within(&Load::Closed { concurrency: 5 }),
            Ok(Shard { k: 2, n: 4 })
        );
        // A concurrency ramp is split level by level (`RunLoad::shared`); an exploring
        // load runs on the first shard only.
        let ramp = Load::ClosedRamp {
            curve: crate::planner::RateCurve::Steps {
                rates: vec![1.0, 8.0],
                width: 1.0,
            },
            levels: vec![
                (std::time::Duration::ZERO, 1),
                (std::time::Duration::from_secs(1), 8),
            ],
        };
        assert_eq!(Shard { k: 2, n: 3 }.within(&ramp), Ok(Shard { k: 2, n: 3 }));
        let explore = Load::Explore(crate::planner::explore::terms_of(
            &crate::plan::ExploreSpec {
                max: Some(crate::plan::ExploreLevel(8.0)),
                ..Default::default()
            },
        ));
        assert_eq!(
            Shard { k: 1, n: 3 }.within(&explore),
            Ok(Shard { k: 1, n: 1 })
        );
        let note = Shard { k: 2, n: 3 }.within(&explore).unwrap_err();
        assert!(note.contains("first shard only"), "{note}");
    }

    #[test]
    fn index_bases_never_overlap() {
        let s = shards(3);
        assert_eq!(
            s.iter().map(|s| s.index_base(10)).collect::<Vec<_>>(),
            [0, 10, 20]
        );
    }
}
