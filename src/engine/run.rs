//! The load loop: one driver that starts requests when the load allows (closed loop:
//! a free slot; open loop: the next arrival, within `max_in_flight`), hands each record
//! to the sink as it completes (keeping none), and stops on `duration` (soft) or cancellation (grace, then the
//! rest recorded as cancelled). Closed and open loops are one loop with two start rules.
//!
//! Requests in flight are futures polled by this one driver (no task spawn, no lock,
//! no channel per chunk); each has a oneshot that cancels it.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant, SystemTime};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::oneshot;

use super::cancel::cancelled;
pub use super::cancel::{CancelHandle, ChildGuard};
use super::levels::Exploring;
pub use super::levels::{LevelControl, Levels};
use super::load::{clock_of, limit_of};
pub use super::load::{Load, RunConfig};

use super::arrivals::ArrivalError;
use super::cpu::CpuClock;
use super::exchange::exchange;
use super::preconnect::Preconnect;
use super::source::{Next, PreparedRequest, RequestSource};
use super::target::Endpoint;
use super::ticker::{next_tick, Ticker};
use crate::record::{Phase, RequestRecord};

/// Receives each record as it completes (progress, batched storage). Runs on the
/// driver: keep it short (count, push to a channel).
/// Takes each record as its request completes. The engine keeps none: whatever a caller
/// needs of a run's records (the store, the metrics, a test's list), its sink keeps.
pub trait RecordSink {
    fn record(&mut self, record: RequestRecord);
}

impl<F: FnMut(RequestRecord)> RecordSink for F {
    fn record(&mut self, record: RequestRecord) {
        self(record)
    }
}

/// What a run observed.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Requests sent (warmup included): the records handed to the sink.
    pub sent: u64,
    /// Wall-clock time of the run's start instant (record times are offsets from it).
    pub started: SystemTime,
    /// Start of the run to the last record.
    pub wall: Duration,
    /// CPU time (user + system) the run's driving thread used (the process's when the run
    /// moved between threads); see `cpu::CpuClock`.
    pub client_cpu: Option<Duration>,
    /// The time that thread was ready to run but waited for a CPU (`cpu::CpuClock`).
    pub client_wait: Option<Duration>,
    pub cancelled: bool,
    /// The `duration` soft stop ended the run before the source was exhausted.
    pub stopped_by_duration: bool,
    /// The connections opened before the run's clock started (`None` on the reqwest path).
    pub preconnect: Option<Preconnect>,
    /// The most requests the client had in flight at once (sent, response not yet ended).
    pub peak_in_flight: u64,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("invalid open-loop load")]
    Arrivals(#[from] ArrivalError),
    #[error("concurrency must be at least 1")]
    Concurrency,
    #[error("could not start the arrival thread")]
    Thread(#[source] std::io::Error),
}

type InFlight<'a> = FuturesUnordered<Pin<Box<dyn Future<Output = RequestRecord> + Send + 'a>>>;

/// The driver's state between two wake-ups.
struct Driver<'a> {
    ep: &'a Endpoint,
    t0: Instant,
    in_flight: InFlight<'a>,
    cancels: HashMap<u64, oneshot::Sender<()>>,
    next_index: u64,
    /// Most requests in flight (closed loop: the concurrency).
    limit: usize,
    /// The soft stop: `duration` after the first measured request, set when it starts.
    stop_at: Option<Instant>,
    duration: Option<Duration>,
    /// Open loop: the arrival thread.
    ticker: Option<Ticker>,
    /// A tick received whose request has not started yet.
    due: Option<Duration>,
    /// Closed loop: when each free slot was freed (the end of the request that held
    /// it), so lateness includes the driver's own delay in refilling it.
    freed: VecDeque<Duration>,
    /// Records handed to the sink.
    sent: u64,
    /// The most requests in flight at once.
    peak: usize,
    stopping: bool,
    cancelled: bool,
    exhausted: bool,
    by_duration: bool,
    /// When the source asked to be asked again (a think time), if it did.
    wake: Option<Instant>,
    /// A closed ramp's slot levels still to come (`Load::ClosedRamp`), the next first.
    levels: VecDeque<(Duration, u32)>,
    /// An exploring load's control, level and step.
    explore: Option<Exploring>,
    /// A record ended an exploring step of a count of requests, at this offset.
    step_over: Option<Duration>,
}

impl<'a> Driver<'a> {
    fn start(&mut self, req: PreparedRequest, intended: Duration) {
        let (tx, rx) = oneshot::channel();
        let index = self.next_index;
        self.next_index += 1;
        self.cancels.insert(index, tx);
        let fut = exchange(self.ep, req, index, intended, self.t0, rx);
        self.in_flight.push(Box::pin(fut));
        self.peak = self.peak.max(self.in_flight.len());
    }

    /// Starts every request the load allows now.
    fn fill(&mut self, source: &mut (dyn RequestSource + Send)) {
        while !self.stopping && self.in_flight.len() < self.limit {
            let now = Instant::now();
            let intended = match self.ticker.as_mut() {
                None => self.freed.pop_front().unwrap_or(now - self.t0),
                // An exploring open loop draining: its arrivals are not sent.
                Some(t) if self.explore.as_ref().is_some_and(|e| e.draining) => {
                    self.due = None;
                    while t.try_next().is_some() {}
                    break;
                }
                Some(t) => match self.due.or_else(|| t.try_next()) {
                    Some(x) => x,
                    None => break,
                },
            };
            let t0 = self.t0;
            if self.stop_at.is_some_and(|s| now >= s || t0 + intended >= s) {
                self.stopping = true;
                self.by_duration = true;
                break;
            }
            self.due = None;
            self.wake = None;
            match source.next() {
                Next::Request(req) => {
                    if self.stop_at.is_none() && req.phase != Phase::Warmup {
                        // Warmup does not use the budget (as EvalScope's `--duration`); a
                        // priming pass given a duration counts from its first request.
                        self.stop_at = self.duration.map(|d| t0 + intended + d);
                    }
                    self.start(req, intended);
                }
                Next::Pending if !self.in_flight.is_empty() => {
                    self.due = self.ticker.as_ref().map(|_| intended);
                    break;
                }
                Next::Wait(at) => {
                    self.due = self.ticker.as_ref().map(|_| intended);
                    self.wake = Some(at);
                    break;
                }
                Next::Pending | Next::Done => {
                    self.stopping = true;
                    self.exhausted = true;
                }
            }
        }
    }

    fn complete(
        &mut self,
        mut rec: RequestRecord,
        source: &mut (dyn RequestSource + Send),
        sink: &mut (dyn RecordSink + Send),
    ) {
        // Every consumer (the source, the store, the live metrics) sees the stored times.
        rec.truncate_to_resolution();
        self.cancels.remove(&rec.index);
        if let Some(e) = &self.explore {
            if e.control.0.lock().is_ok_and(|mut c| c.observe(&rec)) {
                // The step ends just after the record that filled it (steps are
                // half-open, records kept to whole microseconds).
                self.step_over = Some(rec.end + Duration::from_micros(1));
            }
        }
        // A slot freed while the loop is over its (ramped-down) slots is not refilled.
        if self.ticker.is_none()
            && !self.stopping
            && self.in_flight.len() + self.freed.len() < self.limit
        {
            self.freed.push_back(rec.end);
        }
        source.completed(&rec);
        self.sent += 1;
        sink.record(rec);
    }

    /// A closed ramp's slot levels now due (before anything starts, so a request never
    /// starts under a level already past): new slots free from the level's instant; on a
    /// fall, slots freed but not yet refilled beyond the new count are dropped.
    fn due_levels(&mut self) {
        let now = Instant::now();
        while self.levels.front().is_some_and(|l| self.t0 + l.0 <= now) {
            if let Some((at, slots)) = self.levels.pop_front() {
                self.set_level(at, slots as usize);
            }
        }
        self.due_explore(now);
    }

    /// An exploring load's step now over (or its drain ended): the control names the next
    /// level, or ends the run.
    fn due_explore(&mut self, now: Instant) {
        if self.explore.as_ref().is_some_and(|e| e.draining) {
            self.step_over = None;
            if !self.in_flight.is_empty() {
                return;
            }
            let at = now.saturating_duration_since(self.t0);
            if let Some(e) = self.explore.as_mut() {
                e.begin(at);
            }
        }
        while let Some(e) = self.explore.clone() {
            let at = match (self.step_over.take(), e.due) {
                (Some(at), _) => at,
                (None, Some(at)) if self.t0 + at <= now => at,
                _ => break,
            };
            if self.stopping {
                break;
            }
            let next = e.control.0.lock().ok().and_then(|mut c| c.next(at));
            match next {
                Some(level) => {
                    match &self.ticker {
                        Some(t) => t.set_rate(at, level),
                        None => self.set_level(at, super::load::slots(level)),
                    }
                    let open = self.ticker.is_some();
                    if let Some(e) = self.explore.as_mut() {
                        e.hold(at, level, open);
                    }
                }
                None => {
                    self.explore = None;
                    self.stopping = true;
                    self.by_duration = true;
                }
            }
        }
    }

    /// The next level's instant (a ramp's next level, or an exploring step's end).
    fn level_at(&self) -> Option<Instant> {
        let ramp = self.levels.front().map(|l| l.0);
        let explore = self.explore.as_ref().and_then(|e| e.due);
        ramp.or(explore).map(|at| self.t0 + at)
    }

    /// `slots` hold from `at`: none (a shard's part of a split ramp's low level) lets the
    /// requests in flight end and starts none until the next level.
    fn set_level(&mut self, at: Duration, slots: usize) {
        for _ in self.limit..slots {
            self.freed.push_back(at);
        }
        self.limit = slots;
        self.freed
            .truncate(slots.saturating_sub(self.in_flight.len()));
    }

    fn wants_tick(&self) -> bool {
        self.ticker.is_some()
            && self.due.is_none()
            && !self.stopping
            && self.in_flight.len() < self.limit
    }
}

/// Runs one load against `ep`. Failed requests are records, never errors.
pub async fn run(
    ep: &Endpoint,
    source: &mut (dyn RequestSource + Send),
    cfg: &RunConfig,
    cancel: &CancelHandle,
    sink: &mut (dyn RecordSink + Send),
) -> Result<RunOutput, RunError> {
    let clock = clock_of(&cfg.load, source)?;
    // Before the clock: the load's connections (a cancellation stops the pre-connecting).
    let wanted = cfg.preconnections(source.requests_left());
    let preconnect = tokio::select! {
        biased;
        p = ep.preconnect(wanted) => p,
        () = cancelled(cancel) => None,
    };
    let cpu = CpuClock::start();
    let started = SystemTime::now();
    let t0 = Instant::now();
    let ticker = match clock {
        Some(c) => Some(Ticker::start(c, t0).map_err(RunError::Thread)?),
        None => None,
    };
    let mut d = Driver {
        ep,
        t0,
        in_flight: FuturesUnordered::new(),
        cancels: HashMap::new(),
        next_index: 0,
        limit: limit_of(&cfg.load),
        stop_at: None,
        duration: cfg.duration,
        ticker,
        due: None,
        freed: VecDeque::new(),
        sent: 0,
        peak: 0,
        stopping: cancel.is_cancelled(),
        cancelled: cancel.is_cancelled(),
        exhausted: false,
        by_duration: false,
        wake: None,
        step_over: None,
        levels: match &cfg.load {
            Load::ClosedRamp { levels } => levels.iter().skip(1).copied().collect(),
            _ => VecDeque::new(),
        },
        explore: match &cfg.load {
            Load::Explore {
                step,
                control,
                first,
                ..
            } => Some(Exploring::new(control.clone(), *step, *first)),
            _ => None,
        },
    };
    drive(&mut d, source, cfg.grace, cancel, sink).await;
    d.ticker = None;
    let wall = t0.elapsed();
    let client_cpu = cpu.elapsed();
    let client_wait = cpu.waited();
    Ok(RunOutput {
        sent: d.sent,
        started,
        wall,
        client_cpu,
        client_wait,
        cancelled: d.cancelled,
        stopped_by_duration: d.by_duration && !d.exhausted,
        preconnect,
        peak_in_flight: d.peak as u64,
    })
}

/// The event loop: fill, then wait for a completion, a tick, the duration, or cancellation.
async fn drive(
    d: &mut Driver<'_>,
    source: &mut (dyn RequestSource + Send),
    grace: Duration,
    cancel: &CancelHandle,
    sink: &mut (dyn RecordSink + Send),
) {
    let far = d.t0 + Duration::from_secs(86_400 * 365);
    let mut cancel_rx = cancel.tx.subscribe();
    let stop_sleep = tokio::time::sleep_until(far.into());
    let grace_sleep = tokio::time::sleep_until(far.into());
    let wake_sleep = tokio::time::sleep_until(far.into());
    let level_sleep = tokio::time::sleep_until(far.into());
    tokio::pin!(stop_sleep, grace_sleep, wake_sleep, level_sleep);
    let mut armed = false;
    loop {
        d.due_levels();
        d.fill(source);
        if let (false, Some(at)) = (armed, d.stop_at) {
            stop_sleep.as_mut().reset(at.into());
            armed = true;
        }
        if d.in_flight.is_empty() && d.stopping {
            return;
        }
        let wants_tick = d.wants_tick();
        if let Some(at) = d.wake {
            wake_sleep.as_mut().reset(at.into());
        }
        let level_at = d.level_at();
        if let Some(at) = level_at {
            level_sleep.as_mut().reset(at.into());
        }
        tokio::select! {
            biased;
            Some(rec) = d.in_flight.next(), if !d.in_flight.is_empty() => d.complete(rec, source, sink),
            () = &mut wake_sleep, if d.wake.is_some() && !d.stopping => d.wake = None,
            () = &mut level_sleep, if level_at.is_some() && !d.stopping => d.due_levels(),
            tick = next_tick(&mut d.ticker), if wants_tick => {
                d.due = tick;
                d.stopping |= tick.is_none();
            }
            () = &mut stop_sleep, if d.stop_at.is_some() && !d.stopping => {
                d.stopping = true;
                d.by_duration = true;
            }
            r = cancel_rx.changed(), if !d.cancelled => {
                if r.is_err() || *cancel_rx.borrow() {
                    d.cancelled = true;
                    d.stopping = true;
                    grace_sleep.as_mut().reset((Instant::now() + grace).into());
                }
            }
            () = &mut grace_sleep, if d.cancelled => {
                // Dropping the senders cancels every request still in flight.
                d.cancels.clear();
                grace_sleep.as_mut().reset(far.into());
            }
        }
    }
}
