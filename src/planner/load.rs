//! A run's load, typed once by the planner (`RunSpec::load`): how it sends its requests
//! ([`Load`], each mode with the parameters only it has) and what every mode shares
//! ([`RunLoad`]: requests, duration, warmup, cancellation, the saturation stop), read
//! from the load table as written (kept in `settings`, whose JSON is the run's id). No
//! stage after the planner reads the load table (`tests/architecture.rs`); a shard's part
//! of a load is [`RunLoad::shared`].

use std::collections::BTreeMap;
use std::time::Duration;

use crate::metrics::sla::{Bounds, SuccessFloor};
use crate::metrics::steps::StepWindow;
use crate::plan::{Arrivals, DatasetKind, LoadSpec, OnSaturation, SearchVariable, StopWhen};

use super::cancel::CancelPlan;
use super::explore::ExploreTerms;
use super::RateCurve;

/// A run's load as every stage after the planner reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLoad {
    /// How the run sends its requests.
    pub mode: Load,
    /// The measured requests the load asks for (`requests`), when it names them.
    pub requests: Option<u32>,
    /// The load's `duration`: no request is sent after it.
    pub duration: Option<Duration>,
    /// The warmup requests sent before the measured ones (`planner::warmup_count`).
    pub warmup: u32,
    /// The load's cancellation injection (`cancel`), if any.
    pub cancel: Option<CancelPlan>,
    /// Whether the run stops once it over-saturates the server (`stop_when`).
    pub stops_when_saturated: bool,
    /// Whether a stop on saturation skips the higher tiers (`on_saturation`).
    pub skips_higher: bool,
}

/// How a run sends its requests: the mode, with every parameter of it the stages read.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Closed loop: `concurrency` requests (or conversations) in flight.
    Closed { concurrency: u32 },
    /// Open loop: arrivals at `rate` per second spaced by `process`, at most
    /// `max_in_flight` requests in flight when set.
    Open {
        rate: f64,
        process: ArrivalProcess,
        max_in_flight: Option<u32>,
    },
    /// A trace replayed at its recorded times, at most `max_in_flight` in flight. A
    /// `concurrency` or `rate` the load also names is not used (the trace's clock is);
    /// it is kept to say so, and a shard's part of it is still taken (a shard with no part
    /// of a named concurrency has no share of the run).
    Trace {
        max_in_flight: Option<u32>,
        named_concurrency: Option<u32>,
        named_rate: Option<f64>,
    },
    /// An open loop whose rate follows `curve`, its arrivals Poisson or, when
    /// `constant`, evenly spaced in the ramp's cumulative count; at most `max_in_flight`
    /// in flight.
    Ramp {
        curve: RateCurve,
        constant: bool,
        max_in_flight: Option<u32>,
    },
    /// A closed loop whose slots follow a concurrency ramp: `curve` (requests in flight
    /// over time, `planner::concurrency_ramp`) and the whole slots the loop holds,
    /// `levels[i] = (at, slots)` (a shard's part of them when the ramp is split).
    ClosedRamp {
        curve: RateCurve,
        levels: Vec<(Duration, u32)>,
    },
    /// A load that grows until the server saturates: its rule, how each level ends, and
    /// what grows (a closed loop's requests in flight, or with `by_rate` an open loop's
    /// req/s, Poisson arrivals and no in-flight cap).
    Explore(ExploreTerms),
    /// An SLA search: its trials are runs of their own (`planner::search::probe_run`),
    /// each closed or open.
    Search(SearchTerms),
}

/// How an open loop's arrivals are spaced, with its parameters resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalProcess {
    /// Exponential gaps (the default).
    Poisson,
    /// Gamma gaps of shape `burstiness` (1 = Poisson, < 1 burstier).
    Gamma { burstiness: f64 },
    /// Equal gaps of 1/rate.
    Constant,
}

impl ArrivalProcess {
    /// The arrivals of an open loop, or of an exploring load by rate: `arrivals` (Poisson
    /// by default) with its `burstiness`.
    pub fn of(load: &LoadSpec) -> ArrivalProcess {
        match load.arrivals.unwrap_or_default() {
            Arrivals::Poisson => ArrivalProcess::Poisson,
            Arrivals::Gamma => ArrivalProcess::Gamma {
                burstiness: load.burstiness.unwrap_or(1.0),
            },
            Arrivals::Constant => ArrivalProcess::Constant,
        }
    }
}

/// An SLA search's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchTerms {
    pub variable: SearchVariable,
    /// Its `slo` as written.
    pub slo: BTreeMap<String, String>,
    /// The searched range (`None` for a precision that cannot be read).
    pub bounds: Option<Bounds>,
    /// Trials per probed value.
    pub trials: u32,
    /// The success floor it applies (`None` for an `slo` that cannot be read).
    pub(crate) floor: Option<SuccessFloor>,
}

impl RunLoad {
    /// The typed load of `load` for a dataset of `kind` under the plan's `seed` (the
    /// seed of its cancellation draws).
    pub(crate) fn of(load: &LoadSpec, kind: DatasetKind, seed: u64) -> RunLoad {
        RunLoad {
            mode: Load::of(load, kind),
            requests: load.requests,
            duration: load.duration.map(|d| d.0),
            warmup: super::warmup_count(load),
            cancel: load.cancel.as_ref().map(|c| CancelPlan::of(c, seed)),
            stops_when_saturated: load.stop_when == Some(StopWhen::Saturated),
            skips_higher: load.on_saturation == Some(OnSaturation::SkipHigher),
        }
    }

    /// The step windows of a ramped load, and the key a step's level goes under (`rate`
    /// or `concurrency`); `None` for any other load, or a curve without steps.
    pub(crate) fn step_windows(&self) -> Option<(Vec<StepWindow>, &'static str)> {
        let (steps, key) = match &self.mode {
            Load::Ramp { curve, .. } => (curve.steps(), "rate"),
            Load::ClosedRamp { curve, .. } => (
                super::concurrency_ramp::concurrency_steps(curve),
                "concurrency",
            ),
            _ => return None,
        };
        let windows: Vec<StepWindow> = steps
            .into_iter()
            .map(|s| StepWindow {
                rate: s.rate,
                start: s.start,
                end: s.end,
            })
            .collect();
        (!windows.is_empty()).then_some((windows, key))
    }

    /// A search's terms (`None` for any other load).
    pub(crate) fn search(&self) -> Option<&SearchTerms> {
        match &self.mode {
            Load::Search(terms) => Some(terms),
            _ => None,
        }
    }

    /// How long the engine sends: the load's `duration`; a concurrency ramp ends with its
    /// curve (or its `duration`, when shorter).
    pub(crate) fn span(&self) -> Option<Duration> {
        match &self.mode {
            Load::ClosedRamp { curve, .. } => {
                Some(super::concurrency_ramp::run_span(curve, self.duration))
            }
            _ => self.duration,
        }
    }
}

impl Load {
    /// The mode of `load` for a dataset of `kind`. A load that names neither
    /// `concurrency` nor `rate` is refused at validation unless a trace times it; should
    /// one reach here anyway, it is a closed loop of one (the gentlest load).
    fn of(load: &LoadSpec, kind: DatasetKind) -> Load {
        if let Some(variable) = load.search {
            return Load::Search(SearchTerms {
                variable,
                slo: load.slo.clone(),
                bounds: super::search::bounds(load),
                trials: super::search::trials(load),
                floor: super::search::success_floor(load),
            });
        }
        if kind == DatasetKind::Trace {
            return Load::Trace {
                max_in_flight: load.max_in_flight,
                named_concurrency: load.concurrency,
                named_rate: load.rate,
            };
        }
        if let Some(spec) = &load.explore {
            return Load::Explore(super::explore::ExploreTerms {
                arrivals: ArrivalProcess::of(load),
                ..super::explore::terms_of(spec)
            });
        }
        // A ramp whose curve the checks refused never reaches a run: should one, it is
        // sent as the gentlest load below.
        if let Some(curve) = load
            .concurrency_ramp
            .as_ref()
            .and_then(super::concurrency_ramp::curve_of)
        {
            let levels = super::concurrency_ramp::slot_levels(&curve);
            return Load::ClosedRamp { curve, levels };
        }
        if let Some(curve) = load.ramp.as_ref().and_then(RateCurve::of) {
            return Load::Ramp {
                curve,
                constant: load.arrivals == Some(Arrivals::Constant),
                max_in_flight: load.max_in_flight,
            };
        }
        match (load.concurrency, load.rate) {
            (Some(concurrency), _) => Load::Closed { concurrency },
            (None, Some(rate)) => Load::Open {
                rate,
                process: ArrivalProcess::of(load),
                max_in_flight: load.max_in_flight,
            },
            (None, None) => Load::Closed { concurrency: 1 },
        }
    }

    /// Requests in flight at most, when the mode bounds them.
    pub(crate) fn in_flight(&self) -> Option<u32> {
        match self {
            Load::Closed { concurrency } => Some(*concurrency),
            Load::ClosedRamp { .. } => Some(self.slots().1),
            Load::Explore(terms) if !terms.by_rate => Some(terms.rule.max),
            Load::Open { max_in_flight, .. }
            | Load::Trace { max_in_flight, .. }
            | Load::Ramp { max_in_flight, .. } => *max_in_flight,
            Load::Explore(_) | Load::Search(_) => None,
        }
    }

    /// A closed loop's requests in flight at its start (a concurrency ramp's first level,
    /// an exploring closed loop's first); `None` for an open loop.
    pub(crate) fn first_in_flight(&self) -> Option<u32> {
        match self {
            Load::Closed { concurrency } => Some(*concurrency),
            Load::ClosedRamp { .. } => Some(self.slots().0),
            Load::Explore(terms) if !terms.by_rate => Some(terms.rule.from.min(terms.rule.max)),
            _ => None,
        }
    }

    /// A concurrency ramp's first and most slots (one each for an empty ramp, none for
    /// any other load).
    fn slots(&self) -> (u32, u32) {
        match self {
            Load::ClosedRamp { levels, .. } => (
                levels.first().map_or(1, |l| l.1),
                levels.iter().map(|l| l.1).max().unwrap_or(1),
            ),
            _ => (0, 0),
        }
    }

    /// The `max_in_flight` of an open loop, a trace or a ramp (a closed loop's
    /// concurrency bounds it instead: [`Load::in_flight`]).
    pub(crate) fn max_in_flight(&self) -> Option<u32> {
        match self {
            Load::Open { max_in_flight, .. }
            | Load::Trace { max_in_flight, .. }
            | Load::Ramp { max_in_flight, .. } => *max_in_flight,
            _ => None,
        }
    }

    /// Whether a trace's load also names a `concurrency` or `rate` (which its replay does
    /// not use).
    pub(crate) fn names_unused_level(&self) -> bool {
        matches!(
            self,
            Load::Trace { named_concurrency, named_rate, .. }
                if named_concurrency.is_some() || named_rate.is_some()
        )
    }

    /// The users of a run's `output_tps_per_user`: a closed loop's fixed concurrency (its
    /// conversations, for a multi-turn run); none for any other load, whose users are the
    /// mean of its requests in flight.
    pub(crate) fn users(&self) -> Option<u32> {
        match self {
            Load::Closed { concurrency } => Some(*concurrency),
            _ => None,
        }
    }
}

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

impl RunLoad {
    /// The load as one part of it sends it: its part of the concurrency (a concurrency
    /// ramp's, level by level, so the parts sum to it at every instant), rate, requests,
    /// warmup and in-flight cap; `Err(note)` when its part is nothing (the run is
    /// skipped).
    pub(crate) fn shared(&self, part: &dyn LoadShare) -> Result<RunLoad, String> {
        let none = |what: &str, total: u64| {
            format!(
                "shard {part} has no share of this run ({what} {total} over {} shards); skipped",
                part.parts()
            )
        };
        let count = |what: &str, total: u32| match part.count(u64::from(total)) {
            0 => Err(none(what, u64::from(total))),
            n => Ok(n as u32),
        };
        let cap = |m: Option<u32>| m.map(|m| part.count(u64::from(m)).max(1) as u32);
        // Told after a closed loop's concurrency, before a concurrency ramp's levels.
        let requests = self.requests.map(|r| count("requests", r));
        let mode = match &self.mode {
            Load::Closed { concurrency } => Load::Closed {
                concurrency: count("concurrency", *concurrency)?,
            },
            Load::Open {
                rate,
                process,
                max_in_flight,
            } => Load::Open {
                rate: part.rate(*rate),
                process: *process,
                max_in_flight: cap(*max_in_flight),
            },
            Load::Trace {
                max_in_flight,
                named_concurrency,
                named_rate,
            } => Load::Trace {
                max_in_flight: cap(*max_in_flight),
                named_concurrency: named_concurrency
                    .map(|c| count("concurrency", c))
                    .transpose()?,
                named_rate: named_rate.map(|r| part.rate(r)),
            },
            Load::Ramp {
                curve,
                constant,
                max_in_flight,
            } => Load::Ramp {
                curve: curve.clone(),
                constant: *constant,
                max_in_flight: cap(*max_in_flight),
            },
            Load::ClosedRamp { curve, levels } => {
                requests.clone().transpose()?;
                Load::ClosedRamp {
                    curve: curve.clone(),
                    levels: split_levels(levels, part)?,
                }
            }
            other => other.clone(),
        };
        Ok(RunLoad {
            mode,
            requests: requests.transpose()?,
            warmup: part.count(u64::from(self.warmup)) as u32,
            ..self.clone()
        })
    }
}

/// One part's slot levels of a split concurrency ramp: each level split as the other
/// counts are; `Err(note)` when the part holds no slot at any level.
fn split_levels(
    levels: &[(Duration, u32)],
    part: &dyn LoadShare,
) -> Result<Vec<(Duration, u32)>, String> {
    let mine: Vec<_> = levels
        .iter()
        .map(|&(at, slots)| (at, part.count(u64::from(slots)) as u32))
        .collect();
    if mine.iter().all(|l| l.1 == 0) {
        let most = levels.iter().map(|l| l.1).max().unwrap_or(0);
        return Err(format!(
            "shard {part} has no share of this run (a concurrency ramp of at most {most} over \
             {} shards); skipped",
            part.parts()
        ));
    }
    Ok(mine)
}
