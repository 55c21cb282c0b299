//! What a merge keeps of each shard besides its rows. Client health is each machine's
//! own: every shard's client CPU, send lateness and `client_bound` verdict are kept per
//! shard, and the merged verdict is the worst shard's, named. And how closely the shards
//! started each run: each shard's clock offset to shard 1 (measured by the start
//! barrier) puts its times on shard 1's clock, so the spread of the shards' starts, and
//! of their first measured requests, is measured rather than assumed.

use std::collections::BTreeMap;

use crate::record::facts::{ShardClientFacts, ShardStartFacts, ShardStarts};
use crate::record::RunFacts;
use crate::store::StoredRun;

/// Shard 1's clock minus this shard's (µs), as the barrier measured it; 0 without one.
pub(super) fn clock_offset_us(run: &StoredRun) -> i64 {
    run.facts.barrier.as_ref().map_or(0, |b| b.clock_offset_us)
}

/// The wall-clock start of a shard's measured pass on shard 1's clock (unix µs).
pub(super) fn start_us(run: &StoredRun) -> Option<u64> {
    let start = run.facts.measured_start_unix_us?;
    u64::try_from(start as i64 + clock_offset_us(run)).ok()
}

/// How far into the run's one arrival sequence a shard's load began (open loops).
fn lead_us(run: &StoredRun) -> u64 {
    run.facts.shard_lead_us.unwrap_or(0)
}

/// One shard's client health in a run.
#[derive(Debug, Clone, PartialEq)]
struct ClientHealth {
    shard: String,
    cpu_ratio: Option<f64>,
    lateness_p99_ms: Option<f64>,
    client_bound: Option<String>,
}

impl ClientHealth {
    fn of(shard: String, run: &StoredRun) -> ClientHealth {
        let metric = |name: &str| run.metrics.get(name).copied().flatten();
        ClientHealth {
            shard,
            cpu_ratio: metric("client_cpu_ratio"),
            lateness_p99_ms: metric("lateness_p99"),
            client_bound: run.facts.client_bound().map(str::to_string),
        }
    }

    fn facts(&self) -> ShardClientFacts {
        ShardClientFacts {
            shard: self.shard.clone(),
            client_cpu_ratio: self.cpu_ratio,
            lateness_p99: self.lateness_p99_ms,
            client_bound: self.client_bound.clone(),
        }
    }

    /// Busier first: bound before not, then by CPU, then by lateness.
    fn badness(&self) -> (bool, f64, f64) {
        (
            self.client_bound.is_some(),
            self.cpu_ratio.unwrap_or(0.0),
            self.lateness_p99_ms.unwrap_or(0.0),
        )
    }
}

/// What the merged run's facts keep of its shards.
pub(super) struct MergedShards {
    shards: Vec<String>,
    client_by_shard: Vec<ShardClientFacts>,
    client_cpu_ratio_shard: Option<String>,
    shard_starts: ShardStarts,
}

impl MergedShards {
    /// Sets the merged run's `shards`, `client_by_shard`, `client_cpu_ratio_shard` and
    /// `shard_starts`.
    pub(super) fn fill(self, facts: &mut RunFacts) {
        facts.shards = Some(self.shards);
        facts.client_by_shard = Some(self.client_by_shard);
        facts.client_cpu_ratio_shard = Some(self.client_cpu_ratio_shard);
        facts.shard_starts = Some(self.shard_starts);
    }
}

/// What the merged run's facts keep of its shards, and its `client_bound` verdict.
pub(super) fn of_shards(
    named: &[(String, &StoredRun)],
    first_of: &BTreeMap<String, u64>,
    base: u64,
) -> (Option<String>, MergedShards) {
    let health: Vec<ClientHealth> = named
        .iter()
        .map(|(s, r)| ClientHealth::of(s.clone(), r))
        .collect();
    let shards = MergedShards {
        shards: named.iter().map(|(s, _)| s.clone()).collect(),
        client_by_shard: health.iter().map(ClientHealth::facts).collect(),
        client_cpu_ratio_shard: busiest(&health).map(|(_, s)| s.to_string()),
        shard_starts: start_spread(named, first_of, base),
    };
    (merged_verdict(&health), shards)
}

/// The merged verdict: `None` when no shard's client limited it; else the worst bound
/// shard's reason, named, with the others that were bound.
fn merged_verdict(health: &[ClientHealth]) -> Option<String> {
    let mut bound: Vec<&ClientHealth> =
        health.iter().filter(|h| h.client_bound.is_some()).collect();
    bound.sort_by(|a, b| {
        let (a, b) = (a.badness(), b.badness());
        b.1.total_cmp(&a.1).then(b.2.total_cmp(&a.2))
    });
    let worst = bound.first()?;
    let of = match bound.len() {
        1 => format!("the one client-bound shard of {}", health.len()),
        k => format!(
            "the worst of {k} client-bound shards of {}: {}",
            health.len(),
            bound
                .iter()
                .map(|h| h.shard.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Some(format!(
        "shard {} ({of}): {}",
        worst.shard,
        worst.client_bound.as_deref().unwrap_or_default()
    ))
}

/// The busiest shard's client CPU ratio and its name.
fn busiest(health: &[ClientHealth]) -> Option<(f64, &str)> {
    health
        .iter()
        .filter_map(|h| Some((h.cpu_ratio?, h.shard.as_str())))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// How closely the shards started the run, on shard 1's clock (µs on the merged time
/// base, whose zero is the earliest shard's start): each shard's load start less its
/// lead (the barrier's own precision), and its first measured request's send. The
/// first measured requests are compared only where every shard's are due at once (no
/// lead: closed loops); an open loop's arrivals are the plan's schedule, kept to within
/// its `lateness`.
fn start_spread(
    parts: &[(String, &StoredRun)],
    first_of: &BTreeMap<String, u64>,
    base: u64,
) -> ShardStarts {
    let mut by_shard = BTreeMap::new();
    let (mut starts, mut firsts) = (Vec::new(), Vec::new());
    let leads = parts.iter().any(|(_, run)| lead_us(run) > 0);
    for (shard, run) in parts {
        let Some(start) = start_us(run) else { continue };
        let start = (start - base.min(start)) as i64 - lead_us(run) as i64;
        starts.push(start);
        let first = first_of.get(shard).copied();
        firsts.extend(first.filter(|_| !leads));
        by_shard.insert(
            shard.clone(),
            ShardStartFacts {
                start_ms: start as f64 / 1e3,
                first_measured_ms: first.map(|f| f as f64 / 1e3),
            },
        );
    }
    let spread = |v: &[i64]| -> Option<f64> {
        let (lo, hi) = (v.iter().min()?, v.iter().max()?);
        Some((hi - lo) as f64 / 1e3)
    };
    let firsts: Vec<i64> = firsts.into_iter().map(|f| f as i64).collect();
    ShardStarts {
        start_spread_ms: spread(&starts),
        first_measured_spread_ms: if firsts.len() == parts.len() {
            spread(&firsts)
        } else {
            None
        },
        by_shard,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(shard: &str, cpu: f64, bound: Option<&str>) -> ClientHealth {
        ClientHealth {
            shard: shard.into(),
            cpu_ratio: Some(cpu),
            lateness_p99_ms: Some(0.5),
            client_bound: bound.map(str::to_string),
        }
    }

    #[test]
    fn the_merged_verdict_is_the_worst_bound_shards_named() {
        let calm = [health("1/3", 0.3, None), health("2/3", 0.4, None)];
        assert_eq!(merged_verdict(&calm), None);
        let some = [
            health("1/3", 0.3, None),
            health("2/3", 0.92, Some("client used 0.92 of 1 CPU cores")),
            health("3/3", 0.97, Some("client used 0.97 of 1 CPU cores")),
        ];
        assert_eq!(
            merged_verdict(&some).as_deref(),
            Some(
                "shard 3/3 (the worst of 2 client-bound shards of 3: 3/3, 2/3): client used 0.97 \
                 of 1 CPU cores"
            )
        );
        assert_eq!(busiest(&some), Some((0.97, "3/3")));
        let one = [
            health("1/2", 0.99, None),
            health("2/2", 0.2, Some("lateness")),
        ];
        assert_eq!(
            merged_verdict(&one).as_deref(),
            Some("shard 2/2 (the one client-bound shard of 2): lateness")
        );
    }
}
