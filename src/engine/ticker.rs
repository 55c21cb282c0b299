//! Precise open-loop send times: a small thread sleeps until each intended arrival
//! (the OS timer is far finer than the async runtime's 1 ms wheel) and hands the
//! intended time to the driver. The schedule never drifts: a late tick still carries
//! its intended time, so lateness is measured, not hidden.

use std::sync::mpsc::{self as std_mpsc, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::arrivals::ArrivalClock;

/// Ticks queued ahead of the driver before the thread waits for it.
const BACKLOG: usize = 1024;

/// A running arrival thread; dropping it stops the thread.
pub(crate) struct Ticker {
    rx: mpsc::Receiver<Duration>,
    _stop: std_mpsc::Sender<()>,
}

impl Ticker {
    pub(crate) fn start(mut clock: ArrivalClock, t0: Instant) -> std::io::Result<Ticker> {
        let (tx, rx) = mpsc::channel(BACKLOG);
        let (stop, stopped) = std_mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("perfplan-arrivals".into())
            .spawn(move || {
                let mut due = Duration::ZERO;
                loop {
                    let now = t0.elapsed();
                    if due > now {
                        match stopped.recv_timeout(due - now) {
                            Err(RecvTimeoutError::Timeout) => continue,
                            _ => return,
                        }
                    }
                    if tx.blocking_send(due).is_err() {
                        return;
                    }
                    due += clock.next_gap();
                }
            })?;
        Ok(Ticker { rx, _stop: stop })
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
