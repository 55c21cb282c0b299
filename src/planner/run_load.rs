//! A run's load as the stages after the planner read it: each parameter of the load table
//! (requests, duration, warmup, in-flight cap, a ramp's step windows, a search's terms),
//! read here, once, from the settings that stay as written (their JSON is the run's id).
//! No stage after the planner reads the load table itself (`tests/architecture.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::metrics::sla::{Bounds, SuccessFloor};
use crate::metrics::steps::StepWindow;
use crate::plan::{LoadSpec, WarmupSpec};

use super::RunSpec;

/// How one part of a split load is sized (`distribute::shard::Shard` for `--shard K/N`):
/// its part of a count and of a rate, and what to say when its part is nothing.
pub trait LoadShare: std::fmt::Display {
    /// This part of `total` (the parts sum to `total`).
    fn count(&self, total: u64) -> u64;
    /// This part of an arrival rate.
    fn rate(&self, rate: f64) -> f64;
    /// How many parts the load is split into.
    fn parts(&self) -> u32;
}

impl RunSpec {
    /// The measured requests the load asks for (`requests`), when it names them.
    pub fn requests(&self) -> Option<u32> {
        self.settings.load.requests
    }

    /// The load's `duration`: no request is sent after it.
    pub fn duration(&self) -> Option<Duration> {
        self.settings.load.duration.map(|d| d.0)
    }

    /// The warmup requests sent before the measured ones (`planner::warmup_count`).
    pub fn warmup(&self) -> u32 {
        super::warmup_count(&self.settings.load)
    }

    /// The load's `max_in_flight` as written (a closed loop's concurrency bounds it too:
    /// `Load::in_flight`).
    pub fn max_in_flight(&self) -> Option<u32> {
        self.settings.load.max_in_flight
    }

    /// Whether the load names a `concurrency` or a `rate` (which a trace replay ignores).
    pub(crate) fn names_concurrency_or_rate(&self) -> bool {
        self.settings.load.concurrency.is_some() || self.settings.load.rate.is_some()
    }

    /// The step windows of a ramped load, and the key a step's level goes under (`rate`
    /// or `concurrency`); `None` for any other load.
    pub(crate) fn step_windows(&self) -> Option<(Vec<StepWindow>, &'static str)> {
        super::ramp::windows_of(&self.settings.load)
    }

    /// The load table as written, for `expand` to show.
    pub(crate) fn load_as_written(&self) -> Value {
        serde_json::to_value(&self.settings.load).unwrap_or(Value::Null)
    }

    /// A search's `slo` as written (empty for any other load).
    pub(crate) fn search_slo(&self) -> &BTreeMap<String, String> {
        &self.settings.load.slo
    }

    /// A search's bounds (`None` for any other load, or a precision that cannot be read).
    pub(crate) fn search_bounds(&self) -> Option<Bounds> {
        super::search::bounds(&self.settings.load)
    }

    /// A search's trials per probed value.
    pub(crate) fn search_trials(&self) -> u32 {
        super::search::trials(&self.settings.load)
    }

    /// The success floor a search applies (`None` for any other load).
    pub(crate) fn success_floor(&self) -> Option<SuccessFloor> {
        super::search::success_floor(&self.settings.load)
    }

    /// The run cut down to one request, without warmup, at concurrency 1 (`check`'s probe).
    pub(crate) fn single_request(&self) -> RunSpec {
        let mut r = self.clone();
        r.settings.load = LoadSpec {
            concurrency: Some(1),
            requests: Some(1),
            warmup: Some(WarmupSpec::Count(0)),
            ..LoadSpec::default()
        };
        r
    }
}

impl RunSpec {
    /// The run as one part of a split load sends it: the same id and settings, its part
    /// of the concurrency, rate, requests, warmup and in-flight cap; `Err(note)` when its
    /// part is nothing (the run is skipped).
    pub fn shared(&self, part: &dyn LoadShare) -> Result<RunSpec, String> {
        let mut out = self.clone();
        out.settings.load = share_load(&self.settings.load, part)?;
        if let Some(levels) = self.slot_levels() {
            let most = levels.iter().map(|l| l.1).max().unwrap_or(0);
            let mine: Vec<_> = levels
                .into_iter()
                .map(|(at, slots)| (at, part.count(u64::from(slots)) as u32))
                .collect();
            if mine.iter().all(|l| l.1 == 0) {
                return Err(format!(
                    "shard {part} has no share of this run (a concurrency ramp of at most \
                     {most} over {} shards); skipped",
                    part.parts()
                ));
            }
            out.ramp_part = Some(mine);
        }
        Ok(out)
    }
}

/// `load` as one part of it sends it; `Err(note)` when the part is nothing.
fn share_load(load: &LoadSpec, part: &dyn LoadShare) -> Result<LoadSpec, String> {
    let mut out = load.clone();
    let none = |what: &str, total: u64| {
        format!(
            "shard {part} has no share of this run ({what} {total} over {} shards); skipped",
            part.parts()
        )
    };
    if let Some(c) = load.concurrency {
        let c = part.count(u64::from(c));
        if c == 0 {
            return Err(none(
                "concurrency",
                u64::from(load.concurrency.unwrap_or(0)),
            ));
        }
        out.concurrency = Some(c as u32);
    }
    if let Some(r) = load.rate {
        out.rate = Some(part.rate(r));
    }
    if let Some(r) = load.requests {
        let share = part.count(u64::from(r));
        if share == 0 {
            return Err(none("requests", u64::from(r)));
        }
        out.requests = Some(share as u32);
    }
    if load.warmup.is_some() {
        out.warmup = Some(WarmupSpec::Count(
            part.count(u64::from(super::warmup_count(load))) as u32,
        ));
    }
    if let Some(m) = load.max_in_flight {
        out.max_in_flight = Some(part.count(u64::from(m)).max(1) as u32);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Part `k` of `n`, split as `--shard K/N` splits (the first parts get one more).
    struct Part(u32, u32);

    impl std::fmt::Display for Part {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}/{}", self.0, self.1)
        }
    }

    impl LoadShare for Part {
        fn count(&self, total: u64) -> u64 {
            let (n, i) = (u64::from(self.1), u64::from(self.0 - 1));
            total / n + u64::from(i < total % n)
        }
        fn rate(&self, rate: f64) -> f64 {
            rate / f64::from(self.1)
        }
        fn parts(&self) -> u32 {
            self.1
        }
    }

    #[test]
    fn loads_split_or_skip() {
        let load = LoadSpec {
            concurrency: Some(5),
            requests: Some(7),
            warmup: Some(WarmupSpec::Count(5)),
            max_in_flight: Some(3),
            ..LoadSpec::default()
        };
        let one = share_load(&load, &Part(1, 2)).unwrap();
        let two = share_load(&load, &Part(2, 2)).unwrap();
        assert_eq!((one.concurrency, two.concurrency), (Some(3), Some(2)));
        assert_eq!((one.requests, two.requests), (Some(4), Some(3)));
        assert_eq!(one.warmup, Some(WarmupSpec::Count(3)));
        assert_eq!((one.max_in_flight, two.max_in_flight), (Some(2), Some(1)));
        let single = LoadSpec {
            concurrency: Some(1),
            requests: Some(16),
            ..LoadSpec::default()
        };
        assert_eq!(share_load(&single, &Part(1, 1)).unwrap().requests, Some(16));
        let note = share_load(&single, &Part(2, 2)).unwrap_err();
        assert!(note.contains("concurrency 1 over 2 shards"), "{note}");
        let open = LoadSpec {
            rate: Some(10.0),
            requests: Some(2),
            ..LoadSpec::default()
        };
        assert_eq!(share_load(&open, &Part(1, 4)).unwrap().rate, Some(2.5));
        let note = share_load(&open, &Part(3, 4)).unwrap_err();
        assert!(note.contains("shard 3/4 has no share"), "{note}");
    }
}
