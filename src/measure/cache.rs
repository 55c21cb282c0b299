//! Prefix-cache honesty of a run: the warnings that hold the measured hit ratio against
//! what was planned: a cold run that found a warm cache, an endpoint's `prefix_cache`
//! label the server contradicts, a cache-on run short of its planned share (the planned
//! share itself is `planned`'s). The order runs execute in and when a server's cache is
//! reset are the planner's (`planner::order`).
//! Knows run settings and records; no HTTP here.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::metrics::RunSummary;
use crate::plan::{CacheSetting, CacheState};
use crate::planner::RunSpec;
use crate::record::{Outcome, Phase, RequestRecord};
use crate::trust::{Code, RunWarning, Thresholds};

/// Tokens a cold run's first request may find cached without a leak (a chat template's
/// fixed header), or a tenth of its prompt if that is more.
const FIRST_REQUEST_SLACK: u32 = 64;

/// A measured hit ratio at most this is "no hits" (1% of the prompt tokens).
pub(crate) const NO_HITS: f64 = 0.01;

/// The endpoint's `prefix_cache` label and the run's planned share held against the hit
/// ratio measured (from usage, else from the server's counters): a cache-off endpoint
/// whose server reports hits, a cache-on endpoint whose warm run shows none, and a
/// cache-on run that falls short of its planned share by more than `[trust]
/// cache_shortfall_margin`. An `unknown` label is held against nothing. Each warning names
/// both figures.
pub(crate) fn measured_against_planned(
    run: &RunSpec,
    summary: &RunSummary,
    trust: &Thresholds,
) -> Vec<RunWarning> {
    let value = |name: &str| summary.values.get(name).copied().flatten();
    let Some((measured, source)) = value("cache_hit_ratio")
        .map(|m| (m, "cache_hit_ratio (usage)"))
        .or_else(|| value("server_cache_hit_ratio").map(|m| (m, "server_cache_hit_ratio")))
    else {
        return Vec::new();
    };
    let planned = value("planned_prefix_share");
    let of_planned = planned.map_or(String::new(), |p| format!(", planned share {p:.2}"));
    let endpoint = &run.settings.endpoint.name;
    let warm = run.settings.cache_state == CacheState::Warm;
    match run.settings.endpoint.spec.prefix_cache {
        CacheSetting::Off if measured > NO_HITS => vec![RunWarning::new(
            Code::CacheSetting,
            format!(
                "endpoint `{endpoint}` is labelled prefix_cache = \"off\" but its \
             server reports prefix-cache hits ({source} {measured:.2}{of_planned}): the \
             server caches, so this run does not measure a cache-off server; start it \
             without prefix caching, or label the endpoint prefix_cache = \"on\""
            ),
        )],
        CacheSetting::On if warm && measured <= NO_HITS => vec![RunWarning::new(
            Code::CacheSetting,
            format!(
                "endpoint `{endpoint}` is labelled prefix_cache = \"on\" but this \
             warm run found no cached tokens ({source} {measured:.2}{of_planned}): the \
             server does not cache, does not report it, or keeps too little to hold the \
             run's prompts; check how it was started, or label the endpoint \
             prefix_cache = \"off\""
            ),
        )],
        CacheSetting::On => planned
            .filter(|p| p - measured > trust.cache_shortfall_margin)
            .map(|p| {
                RunWarning::new(
                    Code::CacheShortfall,
                    format!(
                        "the measured hit ratio ({source} {measured:.2}) is more \
                     than {} points below the planned share {p:.2} on endpoint `{endpoint}` \
                     (prefix_cache = \"on\"): the server cached less than the prompts share; \
                     a cache smaller than the run's prefixes, evictions, whole-block caching \
                     of short prompts, or a balancer spreading requests over replicas",
                        (trust.cache_shortfall_margin * 100.0).round()
                    ),
                )
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// What the leak check reads, folded record by record: the (cached, prompt) tokens of
/// the first wave of successful requests (by send time) and of every measured one.
#[derive(Debug)]
pub(crate) struct LeakWatch {
    first: Earliest<(Option<u32>, Option<u32>)>,
    cached: u64,
    prompt: u64,
}

impl LeakWatch {
    /// A watch over the first `first_wave` requests sent (a closed loop's first wave is
    /// sent at once; an open loop's first request alone).
    pub fn new(first_wave: usize) -> LeakWatch {
        LeakWatch {
            first: Earliest::new(first_wave),
            cached: 0,
            prompt: 0,
        }
    }

    pub fn add(&mut self, r: &RequestRecord) {
        if r.outcome != Outcome::Ok || !matches!(r.phase, Phase::Warmup | Phase::Measured) {
            return;
        }
        let u = &r.usage;
        self.first.add(r.sent, (u.cached_tokens, u.prompt_tokens));
        if let (Phase::Measured, Some(c), Some(p)) = (r.phase, u.cached_tokens, u.prompt_tokens) {
            self.cached += u64::from(c);
            self.prompt += u64::from(p);
        }
    }

    /// The warning of a cold run whose usage shows more cache hits than its own shared
    /// prefix explains: the first requests found cached tokens, or the hit ratio is
    /// clearly above the planned share (`planned`). `None` for warm runs and clean cold runs.
    pub fn warning(
        &self,
        run: &RunSpec,
        planned: Option<f64>,
        trust: &Thresholds,
    ) -> Option<RunWarning> {
        if run.settings.cache_state != CacheState::Cold {
            return None;
        }
        let first_hit = self
            .first
            .items()
            .into_iter()
            .filter_map(|&(c, p)| Some((c?, p?)))
            .min_by_key(|(c, _)| *c)
            .filter(|(c, p)| *c > FIRST_REQUEST_SLACK.max(p / 10));
        let ratio = (self.prompt > 0).then(|| self.cached as f64 / self.prompt as f64);
        let share = planned;
        let too_high = ratio
            .zip(share)
            .filter(|(r, s)| *r > s + trust.cache_leak_margin)
            .is_some();
        if first_hit.is_none() && !too_high {
            return None;
        }
        let mut why = Vec::new();
        if let Some((c, p)) = first_hit {
            why.push(format!(
                "its first requests found {c} of {p} prompt tokens cached"
            ));
        }
        if let (Some(r), Some(s), true) = (ratio, share, too_high) {
            why.push(format!(
                "its hit ratio {r:.2} is above the planned shared-prefix share {s:.2}"
            ));
        }
        Some(RunWarning::new(
            Code::CacheLeak,
            format!(
                "this cold run found a warm prefix cache ({}): these prompts were already in \
                 the server's cache (an earlier run or suite with the same seed sent them, or \
                 another client), so the run is not cold and its TTFT and throughput are not a \
                 cold server's. Ways out: a seed no earlier suite used (`--set plan.seed=N`), \
                 a cache reset before each run (`reset_cache` with `reset_cache_before = \
                 \"each_run\"` on endpoint `{}`), or a restarted server",
                why.join("; "),
                run.settings.endpoint.name
            ),
        ))
    }
}

/// The `k` earliest-sent items added (ties in the order they were added).
#[derive(Debug)]
pub(crate) struct Earliest<T> {
    k: usize,
    seq: u64,
    heap: BinaryHeap<(Duration, u64, Reverse<Held<T>>)>,
}

/// A value the heap carries without ordering by it.
#[derive(Debug)]
struct Held<T>(T);

impl<T> PartialEq for Held<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl<T> Eq for Held<T> {}
impl<T> PartialOrd for Held<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Held<T> {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<T> Earliest<T> {
    pub fn new(k: usize) -> Earliest<T> {
        Earliest {
            k: k.max(1),
            seq: 0,
            heap: BinaryHeap::new(),
        }
    }

    pub fn add(&mut self, sent: Duration, value: T) {
        self.heap.push((sent, self.seq, Reverse(Held(value))));
        self.seq += 1;
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// The items kept, earliest first.
    pub fn items(&self) -> Vec<&T> {
        let mut all: Vec<&(Duration, u64, Reverse<Held<T>>)> = self.heap.iter().collect();
        all.sort_by_key(|(sent, seq, _)| (*sent, *seq));
        all.into_iter().map(|(_, _, v)| &v.0 .0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_keeps_the_first_sent_in_order_of_arrival_on_ties() {
        let mut e = Earliest::new(3);
        for (ms, v) in [(5, 'a'), (1, 'b'), (3, 'c'), (1, 'd'), (9, 'e'), (0, 'f')] {
            e.add(Duration::from_millis(ms), v);
        }
        assert_eq!(e.items(), [&'f', &'b', &'d']);
    }
    use crate::record::Usage;

    /// The warning of a cold run whose usage shows more cache hits than its own shared prefix
    /// explains: the first requests found cached tokens, or the hit ratio is clearly above
    /// the planned share. `None` for warm runs and clean cold runs.
    pub(crate) fn leak_warning(run: &RunSpec, records: &[RequestRecord]) -> Option<String> {
        let first_k = match run.load.mode {
            crate::planner::Load::Closed { concurrency } => concurrency.max(1) as usize,
            _ => 1,
        };
        let mut watch = LeakWatch::new(first_k);
        records.iter().for_each(|r| watch.add(r));
        watch
            .warning(run, Some(0.25), &Thresholds::default())
            .map(|w| w.to_string())
    }

    use crate::planner::order::tests::runs;

    fn rec(sent_ms: u64, cached: u32, phase: Phase) -> RequestRecord {
        RequestRecord {
            sent: std::time::Duration::from_millis(sent_ms),
            phase,
            usage: Usage {
                prompt_tokens: Some(1000),
                completion_tokens: Some(4),
                cached_tokens: Some(cached),
                reasoning_tokens: None,
            },
            ..Default::default()
        }
    }

    #[test]
    fn leak_is_warned_only_for_cold_runs_with_unexplained_hits() {
        let rs = runs("");
        let (cold, warm) = (&rs[0], &rs[2]);
        assert_eq!(cold.settings.cache_state, CacheState::Cold);
        let clean = [
            rec(0, 0, Phase::Measured),
            rec(0, 16, Phase::Measured),
            rec(5, 240, Phase::Measured),
            rec(6, 240, Phase::Measured),
        ];
        assert_eq!(leak_warning(cold, &clean), None);
        let leaked = [
            rec(0, 992, Phase::Measured),
            rec(0, 992, Phase::Measured),
            rec(5, 992, Phase::Measured),
        ];
        let w = leak_warning(cold, &leaked).unwrap();
        assert!(w.contains("reset_cache_before = \"each_run\""), "{w}");
        assert!(w.contains("992 of 1000"), "{w}");
        assert_eq!(leak_warning(warm, &leaked), None);
    }

    fn summary(usage: Option<f64>, server: Option<f64>, planned: f64) -> RunSummary {
        let mut s = crate::metrics::summarize(&[], &crate::metrics::SummaryOptions::default());
        s.values.insert("cache_hit_ratio".into(), usage);
        s.values.insert("server_cache_hit_ratio".into(), server);
        s.values
            .insert("planned_prefix_share".into(), Some(planned));
        s
    }

    #[test]
    fn the_cache_label_and_the_planned_share_are_held_against_the_measured_ratio() {
        let labelled = |label: &str| runs(&format!("prefix_cache = \"{label}\""));
        let (on, off, unknown) = (labelled("on"), labelled("off"), runs(""));
        let (cold, warm) = (0, 2);
        let said = |run: &RunSpec, s: &RunSummary| {
            let t = Thresholds::default();
            let all: Vec<String> = measured_against_planned(run, s, &t)
                .iter()
                .map(ToString::to_string)
                .collect();
            all.join("|")
        };
        // Off, yet hits: named with both figures; from the counters when usage has none.
        let w = said(&off[cold], &summary(None, Some(0.31), 0.42));
        assert!(w.starts_with("cache_setting: endpoint `a` is labelled prefix_cache = \"off\""));
        assert!(
            w.contains("server_cache_hit_ratio 0.31, planned share 0.42"),
            "{w}"
        );
        assert_eq!(said(&off[cold], &summary(Some(0.0), Some(0.5), 0.42)), "");
        // On, warm, no hits.
        let w = said(&on[warm], &summary(Some(0.0), None, 0.98));
        assert!(w.contains("warm run found no cached tokens"), "{w}");
        assert!(
            w.contains("cache_hit_ratio (usage) 0.00, planned share 0.98"),
            "{w}"
        );
        // On, short of the plan by more than the margin; within it, nothing.
        let w = said(&on[cold], &summary(Some(0.20), None, 0.45));
        assert!(w.starts_with("cache_shortfall:"), "{w}");
        assert!(w.contains("0.20) is more than 10 points below the planned share 0.45"));
        assert_eq!(said(&on[cold], &summary(Some(0.36), None, 0.45)), "");
        // Unknown: nothing is held against it; no measured figure: nothing to hold.
        assert_eq!(said(&unknown[cold], &summary(Some(0.0), None, 0.98)), "");
        assert_eq!(said(&on[warm], &summary(None, None, 0.98)), "");
    }
}
