//! CPU time behind `client_cpu_ratio`: the engine's driving thread's own (nanoseconds, from
//! `CLOCK_THREAD_CPUTIME_ID`) when a run stays on one thread, as on the suite's
//! current-thread runtime, so in-process simulators and the database writer do not count;
//! else the whole process's (user + system, all threads, from `/proc/self/stat`). Linux
//! only; `None` elsewhere. Beside it, the time that thread was ready to run but waited for
//! a CPU (`/proc/thread-self/schedstat`'s run-queue wait): a client starved by another
//! process on its cores uses little CPU and waits much.

use std::thread::ThreadId;
use std::time::Duration;

/// CPU time from the start of a run.
pub(crate) struct CpuClock {
    thread: Option<(ThreadId, Duration)>,
    process: Option<Duration>,
    /// The thread's run-queue wait at the start.
    waited: Option<Duration>,
}

impl CpuClock {
    pub fn start() -> CpuClock {
        CpuClock {
            thread: thread_cpu_time().map(|t| (std::thread::current().id(), t)),
            process: process_cpu_time(),
            waited: thread_run_queue_wait(),
        }
    }

    /// The time the starting thread waited for a CPU since `start` (`None` off Linux, or
    /// from another thread).
    pub fn waited(&self) -> Option<Duration> {
        let (id, _) = self.thread?;
        if id != std::thread::current().id() {
            return None;
        }
        Some(thread_run_queue_wait()?.saturating_sub(self.waited?))
    }

    /// The CPU used since `start`: the thread's when still on the same thread.
    pub fn elapsed(&self) -> Option<Duration> {
        if let Some((id, t0)) = self.thread {
            if id == std::thread::current().id() {
                return thread_cpu_time().map(|t| t.saturating_sub(t0));
            }
        }
        Some(process_cpu_time()?.saturating_sub(self.process?))
    }
}

/// The calling thread's CPU time so far (user + system).
#[cfg(target_os = "linux")]
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    use nix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).ok()?;
    Some(Duration::new(
        u64::try_from(t.tv_sec()).ok()?,
        u32::try_from(t.tv_nsec()).ok()?,
    ))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    None
}

/// The calling thread's time so far runnable but waiting for a CPU (the second field of
/// `/proc/thread-self/schedstat`, nanoseconds).
pub(crate) fn thread_run_queue_wait() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat(&text)
}

fn parse_schedstat(text: &str) -> Option<Duration> {
    let ns: u64 = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Linux reports `/proc` times in USER_HZ ticks, fixed at 100 per second for user space.
const TICKS_PER_SECOND: u64 = 100;

/// User + system CPU time of the whole process so far (10 ms resolution).
pub fn process_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat(&stat)
}

fn parse_stat(stat: &str) -> Option<Duration> {
    // Fields after the command name (which may contain spaces) start at field 3 (state);
    // utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line() {
        let line = "1234 (perf plan) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 4 0 555 1000 10 18446744073709551615";
        assert_eq!(parse_stat(line), Some(Duration::from_millis(2800)));
    }

    #[test]
    fn a_busy_thread_counts_its_own_time_only() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let clock = CpuClock::start();
        // Another thread's work is not this thread's.
        std::thread::spawn(|| spin(Duration::from_millis(40)))
            .join()
            .unwrap();
        let idle = clock.elapsed().unwrap();
        spin(Duration::from_millis(40));
        let busy = clock.elapsed().unwrap();
        assert!(idle < Duration::from_millis(20), "{idle:?}");
        assert!(
            busy >= idle + Duration::from_millis(20),
            "{idle:?} then {busy:?}"
        );
    }

    /// Keeps the calling thread on the CPU for `d` of its own CPU time.
    fn spin(d: Duration) {
        let t0 = thread_cpu_time().unwrap();
        while thread_cpu_time().unwrap() - t0 < d {
            std::hint::black_box(0u64);
        }
    }

    #[test]
    fn parses_a_schedstat_line() {
        assert_eq!(
            parse_schedstat("0 61502 1\n"),
            Some(Duration::from_nanos(61502))
        );
        assert_eq!(parse_schedstat("12"), None);
    }

    #[test]
    fn reads_this_process() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_time().is_some());
        }
    }
}
