//! Precise open-loop send times: a small thread sleeps until each intended arrival
//! (the OS timer is far finer than the async runtime's 1 ms wheel) and hands the
//! intended time to the driver. The schedule never drifts: a late tick still carries
//! its intended time, so lateness is measured, not hidden. An exploring open loop changes
//! its rate at a step's end (`Ticker::set_rate`): the gap then pending is rescaled from
//! that instant, so the arrivals stay one seeded process (time-rescaling).

use std::sync::mpsc::{self as std_mpsc, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::arrivals::ArrivalClock;

/// Ticks queued ahead of the driver before the thread waits for it.
const BACKLOG: usize = 1024;

/// A running arrival thread; dropping it stops the thread.
pub(crate) struct Ticker {
    rx: mpsc::Receiver<Duration>,
    /// New rates, each from an offset of the run's start; dropping it stops the thread.
    rates: std_mpsc::Sender<(Duration, f64)>,
}

/// A change of rate: the clock's gaps from now on, and the arrival pending.
fn change(clock: &mut ArrivalClock, due: &mut Duration, (at, rate): (Duration, f64)) {
    if let Some(old) = clock.set_rate(rate) {
        *due = rescale(*due, at, old, rate);
    }
}

/// The next arrival `due` after the rate changes from `old` to `new` at `at`: the part
/// of its gap still to come scaled by old ÷ new.
fn rescale(due: Duration, at: Duration, old: f64, new: f64) -> Duration {
    match due.checked_sub(at) {
        Some(left) if new > 0.0 => at + left.mul_f64(old / new),
        _ => due,
    }
}

impl Ticker {
    pub(crate) fn start(mut clock: ArrivalClock, t0: Instant) -> std::io::Result<Ticker> {
        let (tx, rx) = mpsc::channel(BACKLOG);
        let (rates, changes) = std_mpsc::channel::<(Duration, f64)>();
        std::thread::Builder::new()
            .name("perfplan-arrivals".into())
            .spawn(move || {
                let mut due = Duration::ZERO;
                loop {
                    while let Ok(c) = changes.try_recv() {
                        change(&mut clock, &mut due, c);
                    }
                    let now = t0.elapsed();
                    if due > now {
                        match changes.recv_timeout(due - now) {
                            Ok(c) => change(&mut clock, &mut due, c),
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                        continue;
                    }
                    if tx.blocking_send(due).is_err() {
                        return;
                    }
                    due += clock.next_gap();
                }
            })?;
        Ok(Ticker { rx, rates })
    }

    /// Arrivals at `rate` per second from `at` (an offset from the run's start) on.
    pub(crate) fn set_rate(&self, at: Duration, rate: f64) {
        // A thread already ended has nothing left to send.
        let _ = self.rates.send((at, rate));
    }

    /// A tick already due, without waiting.
    pub(crate) fn try_next(&mut self) -> Option<Duration> {
        self.rx.try_recv().ok()
    }
}

/// The next tick of `ticker`; never completes without one. `None`: the thread ended.
pub(crate) async fn next_tick(ticker: &mut Option<Ticker>) -> Option<Duration> {
    match ticker {
        Some(t) => t.rx.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_gap_is_rescaled_from_the_change() {
        let ms = Duration::from_millis;
        // Due at 1000 ms at 1/s; from 600 ms on at 4/s: the 400 ms left become 100 ms.
        assert_eq!(rescale(ms(1000), ms(600), 1.0, 4.0), ms(700));
        assert_eq!(rescale(ms(500), ms(600), 1.0, 4.0), ms(500));
    }
}
