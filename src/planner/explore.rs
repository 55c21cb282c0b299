//! An exploring load resolved: the plan's `explore` table (`plan::ExploreSpec`) checked
//! against its load, and turned into the rule the run follows (`metrics::explore::Rule`,
//! defaults applied). Pure: no clock, no I/O.

use std::time::Duration;

use crate::metrics::explore::Rule;
use crate::plan::{ranges, ExploreBy, ExploreLevel, ExploreSpec, ExploreStep, LoadSpec};

/// The defaults of an exploring load's keys.
pub(crate) const DEFAULT_MAX: u32 = 1024;
pub(crate) const DEFAULT_GROWTH: f64 = 2.0;
pub(crate) const DEFAULT_MIN_GAIN: f64 = 0.1;
pub(crate) const DEFAULT_TTFT_FACTOR: f64 = 5.0;
pub(crate) const DEFAULT_MAX_FAILURES: f64 = 0.05;
pub(crate) const DEFAULT_PROBES: u32 = 3;

/// Units in one req/s when an exploring load's `from` or `max` is fractional (levels
/// are then hundredths of a req/s at the finest).
pub(crate) const RATE_SCALE: u32 = 100;

/// The rule of an exploring load that [`explore_problems`] accepts: its levels in whole
/// units (see `Rule`), hundredths of a req/s where `from` or `max` is fractional.
pub(crate) fn rule_of(spec: &ExploreSpec) -> Rule {
    let fractional = [spec.from, spec.max]
        .iter()
        .flatten()
        .any(|v| v.whole().is_none());
    let scale = if fractional { RATE_SCALE } else { 1 };
    let units = |v: Option<ExploreLevel>, default: u32| {
        v.map_or(f64::from(default) * f64::from(scale), |v| {
            (v.0 * f64::from(scale)).round()
        })
        .clamp(1.0, f64::from(u32::MAX)) as u32
    };
    Rule {
        from: units(spec.from, 1),
        max: units(spec.max, DEFAULT_MAX),
        scale,
        growth: spec.growth.unwrap_or(DEFAULT_GROWTH),
        min_gain: spec.min_gain.unwrap_or(DEFAULT_MIN_GAIN),
        ttft_factor: spec.ttft_factor.unwrap_or(DEFAULT_TTFT_FACTOR),
        max_failures: spec.max_failures.unwrap_or(DEFAULT_MAX_FAILURES),
        probes: spec.probes.unwrap_or(DEFAULT_PROBES),
    }
}

/// When a level of an exploring load ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEnd {
    /// After this long.
    After(Duration),
    /// Once this many requests ended in it (successful or failed).
    Requests(u32),
}

impl StepEnd {
    /// The step's length, when a duration ends it.
    pub fn length(self) -> Option<Duration> {
        match self {
            StepEnd::After(d) => Some(d),
            StepEnd::Requests(_) => None,
        }
    }

    /// The step's count of requests, when a count ends it.
    pub fn requests(self) -> Option<u32> {
        match self {
            StepEnd::After(_) => None,
            StepEnd::Requests(n) => Some(n),
        }
    }
}

/// An exploring run's terms: its rule, how each level ends, and whether it grows an
/// open loop's arrival rate (req/s) rather than a closed loop's requests in flight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExploreTerms {
    pub rule: Rule,
    pub step: StepEnd,
    pub by_rate: bool,
    /// A level whose server queue (telemetry) kept growing is saturated.
    pub server_queue: bool,
    /// How an open loop's arrivals are spaced (`by = "rate"`; the load's `arrivals`).
    pub arrivals: super::load::ArrivalProcess,
}

/// The terms of an exploring load that [`explore_problems`] accepts (Poisson arrivals:
/// the load's own are `RunSpec::explore`'s).
pub(crate) fn terms_of(spec: &ExploreSpec) -> ExploreTerms {
    ExploreTerms {
        rule: rule_of(spec),
        step: step_of(spec),
        by_rate: spec.by == Some(ExploreBy::Rate),
        server_queue: spec.server_queue == Some(true),
        arrivals: super::load::ArrivalProcess::Poisson,
    }
}

/// When each level ends (the plan requires `step`; one second should none reach here).
pub(crate) fn step_of(spec: &ExploreSpec) -> StepEnd {
    match spec.step {
        None => StepEnd::After(Duration::from_secs(1)),
        Some(ExploreStep::Duration(d)) => StepEnd::After(d.0),
        Some(ExploreStep::Requests(n)) => StepEnd::Requests(n.max(1)),
    }
}

/// Readings of the server's queue a level needs for `server_queue` to judge it.
const QUEUE_READINGS: u32 = 5;

/// What keeps `server_queue = true` from ever judging a level on this endpoint: its
/// telemetry off, or scraped too seldom for [`QUEUE_READINGS`] readings in a timed step.
pub(crate) fn queue_signal_problem(
    load: &LoadSpec,
    telemetry: Option<&crate::plan::TelemetrySpec>,
) -> Option<String> {
    let spec = load
        .explore
        .as_ref()
        .filter(|s| s.server_queue == Some(true))?;
    let (enabled, interval) = telemetry.map_or((true, crate::plan::DEFAULT_INTERVAL), |t| {
        (t.enabled, t.interval.0)
    });
    if !enabled {
        return Some(
            "`server_queue = true` reads the server's queue from telemetry, which this \
             endpoint turns off (`telemetry = { enabled = false }`): turn it on, or drop \
             `server_queue`"
                .into(),
        );
    }
    let StepEnd::After(step) = step_of(spec) else {
        return None;
    };
    (interval * QUEUE_READINGS > step).then(|| {
        format!(
            "`server_queue = true` judges a level on at least {QUEUE_READINGS} readings of the \
             server's queue, but this endpoint's telemetry reads it every {:?} and a level \
             lasts {:?}: set the endpoint's `telemetry = {{ interval = \"…\" }}` to a fifth \
             of the step or less, or lengthen `step`",
            interval, step
        )
    })
}

/// What is wrong with a level `key` (`from`, `max`): requests in flight are whole, from 1;
/// req/s (`by_rate`) are hundredths at the finest, from 0.01; both at most
/// `MAX_CONCURRENCY`.
fn level_problem(key: &str, v: ExploreLevel, by_rate: bool) -> Option<String> {
    let max = ranges::MAX_CONCURRENCY;
    if !by_rate {
        return (!v.whole().is_some_and(|n| (1..=max).contains(&n))).then(|| {
            format!("explore `{key}` is a whole number of requests in flight from 1 to {max} (by `rate`, req/s may be fractional)")
        });
    }
    let v = v.0;
    let hundredths = v * f64::from(RATE_SCALE);
    let on_grid = (hundredths - hundredths.round()).abs() < 1e-6;
    (!v.is_finite() || !(0.01..=f64::from(max)).contains(&v) || !on_grid).then(|| {
        format!("explore `{key}` by rate is from 0.01 to {max} req/s, in hundredths at the finest")
    })
}

/// What is wrong with the table itself.
fn spec_problems(spec: &ExploreSpec) -> Vec<String> {
    let mut out = Vec::new();
    for (key, v) in [("from", spec.from), ("max", spec.max)] {
        out.extend(v.and_then(|v| level_problem(key, v, spec.by == Some(ExploreBy::Rate))));
    }
    if let (Some(from), Some(top)) = (spec.from, spec.max) {
        let (from, top) = (from.0, top.0);
        if from > top {
            out.push(format!(
                "explore starts above its `max` ({from} > {top}): lower `from` or raise `max`"
            ));
        }
    }
    let ranged = [
        ("growth", spec.growth, 1.1, 16.0),
        ("min_gain", spec.min_gain, 0.0, 10.0),
        ("ttft_factor", spec.ttft_factor, 1.0, 1000.0),
        ("max_failures", spec.max_failures, 0.0, 1.0),
    ];
    for (key, v, lo, hi) in ranged {
        if v.is_some_and(|v| !(lo..=hi).contains(&v)) {
            out.push(format!("explore `{key}` is from {lo} to {hi}"));
        }
    }
    if spec.probes.is_some_and(|p| p > 20) {
        out.push("explore `probes` is from 0 to 20".into());
    }
    match spec.step {
        None => out.push(
            "an exploring load needs `step`, how long each level is held (like \"30s\") or how many requests end in it (like 200)".into(),
        ),
        Some(ExploreStep::Duration(d)) if d.0 < Duration::from_millis(100) => out.push(
            "explore `step` is at least 100ms: each level needs requests that end in it".into(),
        ),
        Some(ExploreStep::Duration(d)) if d.0 > Duration::from_secs(86_400) => {
            out.push("explore `step` is at most 24h".into())
        }
        Some(ExploreStep::Requests(n)) if !(1..=ranges::MAX_REQUESTS).contains(&n) => out.push(
            format!("explore `step` as a count of requests is from 1 to {}", ranges::MAX_REQUESTS),
        ),
        Some(_) => {}
    }
    out
}

/// What is wrong with an exploring load: the table, and the keys it cannot go with.
pub(crate) fn explore_problems(load: &LoadSpec, spec: &ExploreSpec) -> Vec<String> {
    let mut out = spec_problems(spec);
    let clashing: Vec<&str> = [
        ("concurrency", load.concurrency.is_some()),
        ("rate", load.rate.is_some()),
        ("ramp", load.ramp.is_some()),
        ("concurrency_ramp", load.concurrency_ramp.is_some()),
        ("requests", load.requests.is_some()),
        ("duration", load.duration.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    if !clashing.is_empty() {
        out.push(format!(
            "an exploring load chooses its own levels and ends when it has found saturation: drop `{}`",
            clashing.join("`, `")
        ));
    }
    if load.search.is_some() {
        out.push("an exploring load cannot be searched: an SLA search probes fixed loads".into());
    }
    let by_rate = spec.by == Some(ExploreBy::Rate);
    if load.max_in_flight.is_some() {
        out.push("`max_in_flight` caps an open loop (`rate`, `ramp`), not an exploring load, whose queue past saturation is what it measures".into());
    }
    if !by_rate && (load.arrivals.is_some() || load.burstiness.is_some()) {
        out.push("`arrivals` and `burstiness` space an open loop's arrivals: an exploring load has them only with `by = \"rate\"` (by concurrency, each request is sent when one ends)".into());
    }
    if by_rate {
        out.extend(super::resolve::burstiness_problem(load));
    }
    if super::warmup_count(load) > 0 {
        out.push(
            "an exploring load has no warmup: its first level is its warmup (drop `warmup`)".into(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::HumanDuration;

    fn spec() -> ExploreSpec {
        ExploreSpec {
            step: Some(ExploreStep::Duration(HumanDuration(Duration::from_secs(2)))),
            ..ExploreSpec::default()
        }
    }

    #[test]
    fn defaults_make_the_rule() {
        assert!(explore_problems(&LoadSpec::default(), &spec()).is_empty());
        let r = rule_of(&spec());
        assert_eq!((r.from, r.max, r.scale, r.probes), (1, 1024, 1, 3));
        assert_eq!((r.growth, r.min_gain), (2.0, 0.1));
        assert_eq!(step_of(&spec()), StepEnd::After(Duration::from_secs(2)));
        assert!(!terms_of(&spec()).by_rate);
        let counted = ExploreSpec {
            by: Some(ExploreBy::Rate),
            step: Some(ExploreStep::Requests(200)),
            ..ExploreSpec::default()
        };
        assert!(explore_problems(&LoadSpec::default(), &counted).is_empty());
        let t = terms_of(&counted);
        assert!(t.by_rate);
        assert_eq!(t.step, StepEnd::Requests(200));
        assert_eq!((t.step.requests(), t.step.length()), (Some(200), None));
        let none = ExploreSpec {
            step: Some(ExploreStep::Requests(0)),
            ..ExploreSpec::default()
        };
        let p = explore_problems(&LoadSpec::default(), &none).join("\n");
        assert!(p.contains("count of requests is from 1"), "{p}");
    }

    #[test]
    fn bad_explores_say_what_to_do() {
        let load = LoadSpec {
            concurrency: Some(4),
            requests: Some(10),
            ..LoadSpec::default()
        };
        let bad = ExploreSpec {
            from: Some(ExploreLevel(64.0)),
            max: Some(ExploreLevel(8.0)),
            growth: Some(1.0),
            step: None,
            ..ExploreSpec::default()
        };
        let p = explore_problems(&load, &bad).join("\n");
        assert!(p.contains("drop `concurrency`, `requests`"), "{p}");
        assert!(p.contains("explore starts above its `max`"), "{p}");
        assert!(p.contains("explore `growth` is from 1.1 to 16"), "{p}");
        assert!(p.contains("needs `step`"), "{p}");
    }

    #[test]
    fn rates_may_be_hundredths_of_a_req_s_and_users_are_whole() {
        let level = |from: f64, max: f64, by: ExploreBy| ExploreSpec {
            from: Some(ExploreLevel(from)),
            max: Some(ExploreLevel(max)),
            by: Some(by),
            ..spec()
        };
        let slow = level(0.25, 8.0, ExploreBy::Rate);
        assert!(explore_problems(&LoadSpec::default(), &slow).is_empty());
        let r = rule_of(&slow);
        assert_eq!((r.from, r.max, r.scale), (25, 800, RATE_SCALE));
        assert_eq!(r.value(r.from), 0.25);
        // Whole rates keep whole levels (the walk of plans written before).
        let whole = rule_of(&level(2.0, 64.0, ExploreBy::Rate));
        assert_eq!((whole.from, whole.max, whole.scale), (2, 64, 1));
        for (bad, says) in [
            (level(0.005, 8.0, ExploreBy::Rate), "from 0.01 to"),
            (level(0.125, 8.0, ExploreBy::Rate), "in hundredths"),
            (level(1.0, f64::NAN, ExploreBy::Rate), "`max` by rate"),
            (
                level(1.5, 8.0, ExploreBy::Concurrency),
                "whole number of requests",
            ),
        ] {
            let p = explore_problems(&LoadSpec::default(), &bad).join("\n");
            assert!(p.contains(says), "{:?} {:?}: {p}", bad.by, bad.from);
        }
        // A whole level is written as an integer: ids of plans written before stay.
        let json = serde_json::to_string(&level(2.0, 0.5, ExploreBy::Rate)).unwrap();
        assert!(json.contains(r#""from":2,"max":0.5"#), "{json}");
    }
}
