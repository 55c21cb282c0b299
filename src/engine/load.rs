//! A run's load as the engine takes it ([`Load`], [`RunConfig`]): how requests are sent,
//! the connections the load keeps, its first limit of requests in flight and its arrival
//! clock. Knows nothing of plans.

use std::sync::Arc;
use std::time::Duration;

use super::arrivals::{ArrivalClock, Arrivals};
use super::levels::Levels;
use super::run::RunError;
use super::source::RequestSource;

/// How requests are sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// `concurrency` requests in flight; each next one starts when one ends. Warmup
    /// requests come first from the source, so each finished warmup hands its slot to a
    /// measured request.
    Closed { concurrency: u32 },
    /// A closed loop whose slots change over time: `levels[i] = (at, slots)`, from `at`
    /// (an offset from the run's start; the first at zero) `slots` requests in flight
    /// until the next level. A rise starts requests at once; on a fall no request is
    /// cancelled, a finished one is not replaced while the loop is over its slots.
    ClosedRamp { levels: Arc<[(Duration, u32)]> },
    /// A load whose level `control` chooses step by step from what it measured: `first`,
    /// then at the end of each step the level it names (at most `most`), until it names
    /// none and the run ends (requests in flight finish). A step ends after `step`, or,
    /// without one, when the control says so of a record. The level is a closed loop's
    /// slots, or with `open` (its arrivals and seed) an open loop's rate in req/s, changed
    /// on the one arrival clock (`Ticker::set_rate`).
    Explore {
        first: f64,
        most: f64,
        step: Option<Duration>,
        open: Option<(Arrivals, u64)>,
        control: Levels,
    },
    /// Arrivals at `rate` per second regardless of responses; at most `max_in_flight`
    /// in flight when set (a late start is recorded as send lateness).
    Open {
        rate: f64,
        arrivals: Arrivals,
        seed: u64,
        max_in_flight: Option<u32>,
    },
    /// Trace replay: arrivals at the source's recorded offsets
    /// ([`RequestSource::offsets`]), otherwise as `Open`.
    Scheduled { max_in_flight: Option<u32> },
}

/// One run's load settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    pub load: Load,
    /// Soft stop, counted from the run's start: no request starts after it; requests in
    /// flight finish (bounded by their timeouts).
    pub duration: Option<Duration>,
    /// After cancellation, how long requests in flight may still finish.
    pub grace: Duration,
}

impl RunConfig {
    /// Connections the load keeps open, for `Endpoint::new`.
    pub fn pool_size(&self) -> usize {
        match self.load {
            Load::Closed { concurrency } => concurrency as usize,
            Load::ClosedRamp { ref levels } => {
                levels.iter().map(|l| l.1 as usize).max().unwrap_or(1)
            }
            Load::Explore {
                most, open: None, ..
            } => slots(most),
            // An open loop's rate, as `Open`'s.
            Load::Explore { most, .. } => (most.ceil() as usize).clamp(1, 1024),
            Load::Open {
                max_in_flight: Some(n),
                ..
            } => n as usize,
            Load::Open { rate, .. } => (rate.ceil() as usize).clamp(1, 1024),
            Load::Scheduled { max_in_flight } => max_in_flight.map_or(64, |n| n as usize),
        }
    }

    /// Connections to open before the first request (see `preconnect`): the pool size,
    /// never more than the `requests` the run still has (when known).
    pub(crate) fn preconnections(&self, requests: Option<usize>) -> usize {
        // An exploring load opens its first level's connections; it may never need more.
        let wanted = match self.load {
            Load::Explore { first, .. } => slots(first).max(1),
            _ => self.pool_size(),
        };
        wanted.min(requests.unwrap_or(usize::MAX))
    }
}

/// An exploring closed loop's level as requests in flight (whole by its rule); an open
/// loop's rate as the connections it is likely to want.
pub(crate) fn slots(level: f64) -> usize {
    level.ceil().max(0.0) as usize
}

/// Requests in flight at most when the run starts.
pub(crate) fn limit_of(load: &Load) -> usize {
    match *load {
        Load::Closed { concurrency } => concurrency as usize,
        // A shard's part of a split ramp may hold no slot at first.
        Load::ClosedRamp { ref levels } => levels.first().map_or(1, |l| l.1 as usize),
        Load::Explore {
            first, open: None, ..
        } => slots(first).max(1),
        Load::Explore { .. } => usize::MAX,
        Load::Open { max_in_flight, .. } | Load::Scheduled { max_in_flight } => {
            max_in_flight.map_or(usize::MAX, |n| n.max(1) as usize)
        }
    }
}

/// The arrival clock of an open loop (none for a closed one).
pub(crate) fn clock_of(
    load: &Load,
    source: &(dyn RequestSource + Send),
) -> Result<Option<ArrivalClock>, RunError> {
    Ok(match *load {
        Load::Closed { concurrency: 0 } => return Err(RunError::Concurrency),
        Load::Closed { .. } | Load::ClosedRamp { .. } | Load::Explore { open: None, .. } => None,
        Load::Explore {
            first,
            open: Some((arrivals, seed)),
            ..
        } => Some(ArrivalClock::new(first, arrivals, seed)?),
        Load::Open {
            rate,
            arrivals,
            seed,
            ..
        } => Some(ArrivalClock::new(rate, arrivals, seed)?),
        Load::Scheduled { .. } => Some(ArrivalClock::from_offsets(
            &source.offsets().unwrap_or_default(),
        )),
    })
}
