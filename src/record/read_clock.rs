//! How the client timed an answer: the kernel's receive stamps or its own reads, and how
//! late it read (the client's own delay).

use std::time::Duration;

use serde::{Deserialize, Serialize};

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
