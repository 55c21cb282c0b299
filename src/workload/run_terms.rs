//! What a run's settings mean to the engine and the metrics: the plan's SLOs as
//! goodput thresholds, the engine's load and arrival process of a planned run, and the
//! metric definitions. One rule each, read by every pass of a run and by `merge`.

use crate::engine::{self, Load};
use crate::metrics::MetricDefinitions;
use crate::plan;
use crate::planner::{self, RunSpec};

/// The engine's load of a run (its mode from the planner's typed [`planner::Load`]): a
/// trace is sent on its recorded schedule; a search's trials are runs of their own, so a
/// search run itself is never sent (it maps to its gentlest trial, a closed loop of one,
/// for the pool size only).
pub fn engine_load(run: &RunSpec) -> Load {
    match &run.load.mode {
        planner::Load::Closed { concurrency } => Load::Closed {
            concurrency: *concurrency,
        },
        planner::Load::ClosedRamp { levels, .. } => Load::ClosedRamp {
            levels: levels.as_slice().into(),
        },
        planner::Load::Explore(_) => super::explore::engine_load(run)
            .map_or(Load::Closed { concurrency: 1 }, |(load, _)| load),
        planner::Load::Open {
            rate,
            process,
            max_in_flight,
        } => Load::Open {
            rate: *rate,
            arrivals: arrivals(*process),
            seed: run.dataset_seed,
            max_in_flight: *max_in_flight,
        },
        planner::Load::Trace { max_in_flight, .. } | planner::Load::Ramp { max_in_flight, .. } => {
            Load::Scheduled {
                max_in_flight: *max_in_flight,
            }
        }
        planner::Load::Search(_) => Load::Closed { concurrency: 1 },
    }
}

/// The engine's soft stop of a run's passes: the load's `duration`; a concurrency ramp
/// ends with its curve (or its `duration`, when shorter).
pub(crate) fn engine_duration(run: &RunSpec) -> Option<std::time::Duration> {
    run.load.span()
}

/// The engine's arrival process of a planned one.
pub fn arrivals(process: planner::ArrivalProcess) -> engine::Arrivals {
    match process {
        planner::ArrivalProcess::Poisson => engine::Arrivals::Poisson,
        planner::ArrivalProcess::Gamma { burstiness } => engine::Arrivals::Gamma { burstiness },
        planner::ArrivalProcess::Constant => engine::Arrivals::Constant,
    }
}

pub fn definitions(d: plan::MetricDefinitions) -> MetricDefinitions {
    match d {
        plan::MetricDefinitions::Perfplan => MetricDefinitions::Perfplan,
        plan::MetricDefinitions::Evalscope => MetricDefinitions::Evalscope,
        plan::MetricDefinitions::Vllm => MetricDefinitions::Vllm,
    }
}
