//! How the client timed an answer: the kernel's receive stamps or its own reads, and how
//! late it read (the client's own delay).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::RequestRecord;

/// The clock a report's answer times are on: when the bytes arrived (`kernel`, the
/// default: the kernel's receive stamps where the run had them, else the client's reads)
/// or when the client read them (`user`: perfplan's figures before receive stamps, and
/// what clients without them measure).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    #[default]
    Kernel,
    User,
}

impl Clock {
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::Kernel => "kernel",
            Clock::User => "user",
        }
    }

    pub fn parse(text: &str) -> Option<Clock> {
        match text {
            "kernel" => Some(Clock::Kernel),
            "user" => Some(Clock::User),
            _ => None,
        }
    }
}

/// How the client timed an answer's bytes: when the kernel received them (its receive
/// stamps, the lean client over TCP on Linux) or when the client read them; and how long
/// after their arrival the client read them (zero when timed by its reads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadClock {
    /// The answer's times are the kernel's receive stamps.
    pub kernel: bool,
    /// How long after its arrival the first content chunk was read: the client's own part
    /// of TTFT as timed by its reads (`None` without a content chunk).
    pub first_delay: Option<Duration>,
    /// How long after its arrival the last byte read was read.
    pub end_delay: Duration,
    /// The longest such delay over every read of the answer.
    pub max_delay: Duration,
}

impl ReadClock {
    /// Notes a read whose bytes arrived `delay` before it, stamped by the kernel or not;
    /// `first_content`: it delivered the answer's first content chunk.
    pub(crate) fn on_read(&mut self, delay: Duration, kernel: bool, first_content: bool) {
        self.end_delay = delay;
        self.max_delay = self.max_delay.max(delay);
        if self.first_delay.is_none() {
            self.kernel = kernel;
        }
        if first_content {
            self.first_delay = Some(delay);
        }
    }

    /// Every delay through `f` (truncated to the stored resolution, as the times are).
    pub(crate) fn map_delays(&mut self, f: impl Fn(Duration) -> Duration) {
        self.first_delay = self.first_delay.map(&f);
        self.end_delay = f(self.end_delay);
        self.max_delay = f(self.max_delay);
    }

    /// The clock as stored in a row's columns (`None` without `read_clock`: a row of schema
    /// 15 and older, or a request that read no answer byte).
    pub fn stored(
        kernel: Option<i64>,
        first_delay: Option<Duration>,
        end_delay: Option<Duration>,
        max_delay: Option<Duration>,
    ) -> Option<ReadClock> {
        Some(ReadClock {
            kernel: kernel? != 0,
            first_delay,
            end_delay: end_delay.unwrap_or_default(),
            max_delay: max_delay.unwrap_or_default(),
        })
    }
}

impl RequestRecord {
    /// Moves the record's answer times to when the client read the bytes (the user
    /// clock): each content chunk by its read's delay (`content_delays`), the first and
    /// last choice chunk and the first answer by the delay of the content chunk nearest
    /// them (the same read's where they shared one), the end by the last read's. A row
    /// without per-chunk delays (schema 16–18) moves its first content chunk by
    /// `first_delay` and the others not. Nothing moves for an answer not timed by the
    /// kernel, whose times are its reads already.
    pub fn move_to_user_clock(&mut self) {
        let Some(clock) = self.read_clock.filter(|c| c.kernel) else {
            return;
        };
        let delays: Vec<Duration> = match self.content_delays.is_empty() {
            false => self.content_delays.clone(),
            true => (0..self.content_times.len())
                .map(|i| match i {
                    0 => clock.first_delay.unwrap_or_default(),
                    _ => Duration::ZERO,
                })
                .collect(),
        };
        let times = &self.content_times;
        let nearest = |at: Duration| -> Duration {
            let after = times.partition_point(|t| *t < at);
            let closest = [after.checked_sub(1), Some(after)]
                .into_iter()
                .flatten()
                .filter(|&i| i < times.len())
                .min_by_key(|&i| times[i].abs_diff(at));
            closest.map_or(clock.end_delay, |i| {
                delays.get(i).copied().unwrap_or_default()
            })
        };
        self.first_chunk = self.first_chunk.map(|t| t + nearest(t));
        self.last_chunk = self.last_chunk.map(|t| t + nearest(t));
        self.first_answer = self.first_answer.map(|t| t + nearest(t));
        for (t, d) in self.content_times.iter_mut().zip(&delays) {
            *t += *d;
        }
        self.end += clock.end_delay;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn the_user_clock_moves_each_time_by_its_reads_delay() {
        let mut r = RequestRecord {
            sent: ms(10),
            first_chunk: Some(ms(19)),
            content_times: vec![ms(20), ms(30), ms(40)],
            last_chunk: Some(ms(40)),
            first_answer: Some(ms(30)),
            end: ms(41),
            read_clock: Some(ReadClock {
                kernel: true,
                first_delay: Some(ms(2)),
                end_delay: ms(5),
                max_delay: ms(7),
            }),
            content_delays: vec![ms(2), ms(7), ms(1)],
            ..RequestRecord::default()
        };
        let kernel_ttft = r.ttft();
        r.move_to_user_clock();
        assert_eq!(r.content_times, vec![ms(22), ms(37), ms(41)]);
        assert_eq!(r.ttft(), kernel_ttft.map(|t| t + ms(2)));
        // The first choice chunk is nearest the first content chunk; the others are one.
        assert_eq!(
            (r.first_chunk, r.first_answer, r.last_chunk, r.end),
            (Some(ms(21)), Some(ms(37)), Some(ms(41)), ms(46))
        );
    }

    #[test]
    fn rows_without_per_chunk_delays_move_their_first_chunk_and_end() {
        let clock = ReadClock {
            kernel: true,
            first_delay: Some(ms(3)),
            end_delay: ms(1),
            max_delay: ms(3),
        };
        let mut r = RequestRecord {
            content_times: vec![ms(20), ms(30)],
            end: ms(31),
            read_clock: Some(clock),
            ..RequestRecord::default()
        };
        r.move_to_user_clock();
        assert_eq!(
            (r.content_times.clone(), r.end),
            (vec![ms(23), ms(30)], ms(32))
        );
        // Timed by its reads already: nothing moves.
        let mut user = RequestRecord {
            content_times: vec![ms(20)],
            read_clock: Some(ReadClock {
                kernel: false,
                ..clock
            }),
            content_delays: vec![ms(9)],
            ..RequestRecord::default()
        };
        user.move_to_user_clock();
        assert_eq!(user.content_times, vec![ms(20)]);
    }
}
