//! CPU time used by this process (user + system, all threads), read from
//! `/proc/self/stat` so metrics can report `client_cpu_ratio`. Linux only; `None` elsewhere.

use std::time::Duration;

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
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line() {
        let line = "1234 (perf plan) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 4 0 555 1000 10 18446744073709551615";
        assert_eq!(parse_stat(line), Some(Duration::from_millis(2800)));
    }

    #[test]
    fn reads_this_process() {
        if cfg!(target_os = "linux") {
            assert!(process_cpu_time().is_some());
        }
    }
}
