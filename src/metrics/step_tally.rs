//! One step of an exploring load, folded from the records that ended in it into its
//! [`StepFigures`] (the book, loads/explore.md). Pure: no clock, no I/O.

use std::time::Duration;

use super::explore::StepFigures;
use super::stats::percentile;
use crate::record::{Outcome, RequestRecord};

/// The records that ended in one step, folded into its [`StepFigures`]. Its output tok/s
/// is Little's law for a closed loop, level × output tokens ÷ latency summed over the
/// successful requests sent and ended in the step (all that ended in it when none was
/// both): a count of what ended in a short step jumps by whole batches, their latency
/// does not.
#[derive(Debug, Clone, Default)]
pub struct StepTally {
    ok: u64,
    failed: u64,
    /// (output tokens, latency in seconds) of the successful requests sent in the step,
    /// and of all that ended in it.
    within: (f64, f64),
    ended: (f64, f64),
    ttfts_ms: Vec<f64>,
}

impl StepTally {
    /// A record that ended in the step that began at `start`.
    pub fn add(&mut self, rec: &RequestRecord, start: Duration) {
        match rec.outcome {
            Outcome::Ok => {
                self.ok += 1;
                let tokens = rec.output_tokens().map_or(0.0, |t| f64::from(t.0));
                let latency = rec.end.saturating_sub(rec.sent).as_secs_f64();
                self.ended.0 += tokens;
                self.ended.1 += latency;
                if rec.sent >= start {
                    self.within.0 += tokens;
                    self.within.1 += latency;
                }
                if let Some(t) = rec.ttft() {
                    self.ttfts_ms.push(t.as_secs_f64() * 1e3);
                }
            }
            Outcome::Cancelled => {}
            _ => self.failed += 1,
        }
    }

    /// Requests that ended in the step so far (successful or failed; not cancelled).
    pub fn ended(&self) -> u64 {
        self.ok + self.failed
    }

    /// An open loop's step figures over its `span`: its output tok/s is the output tokens
    /// of the successful requests that ended in it over its length (an open loop's
    /// arrivals do not wait for responses, so what ends is what the server served), and
    /// a fresh tally for the next step.
    pub(crate) fn take_open(&mut self, level: u32, span: Duration) -> StepFigures {
        let tokens = self.ended.0;
        let mut figures = self.take(level);
        let secs = span.as_secs_f64();
        figures.output_tps = if secs > 0.0 { tokens / secs } else { 0.0 };
        figures
    }

    /// The step's figures, and a fresh tally for the next step.
    pub fn take(&mut self, level: u32) -> StepFigures {
        let mut t = std::mem::take(self);
        t.ttfts_ms.sort_by(f64::total_cmp);
        let ended = t.ok + t.failed;
        let (tokens, latency) = if t.within.1 > 0.0 { t.within } else { t.ended };
        StepFigures {
            level,
            output_tps: if latency > 0.0 {
                f64::from(level) * tokens / latency
            } else {
                0.0
            },
            ttft_p99: percentile(&t.ttfts_ms, 99.0),
            failed_share: (ended > 0).then(|| t.failed as f64 / ended as f64),
            queue_rises: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_reads_throughput_by_littles_law() {
        let ms = Duration::from_millis;
        let ok = |sent: u64, end: u64| {
            let mut r = RequestRecord {
                sent: ms(sent),
                end: ms(end),
                content_times: vec![ms(sent + 20)],
                ..RequestRecord::default()
            };
            r.usage.completion_tokens = Some(30);
            r
        };
        let mut t = StepTally::default();
        // Sent before the step (left out while some request is both sent and ended in it).
        t.add(&ok(900, 1050), ms(1000));
        t.add(&ok(1000, 1100), ms(1000));
        t.add(&ok(1100, 1200), ms(1000));
        t.add(
            &RequestRecord {
                outcome: Outcome::Http,
                ..RequestRecord::default()
            },
            ms(1000),
        );
        let f = t.take(4);
        assert_eq!(f.level, 4);
        // 4 users × 60 tokens / 0.2 s of latency.
        assert!((f.output_tps - 1200.0).abs() < 1e-6, "{f:?}");
        assert!((f.failed_share.unwrap() - 1.0 / 4.0).abs() < 1e-12);
        assert!(f.ttft_p99.is_some());
        // Only requests sent before the step: they stand for it.
        t.add(&ok(900, 1050), ms(1000));
        assert!((t.take(2).output_tps - 2.0 * 30.0 / 0.15).abs() < 1e-6);
        assert_eq!(t.take(4).failed_share, None);
        // An open loop's step: every token that ended in it, over its length.
        t.add(&ok(900, 1050), ms(1000));
        t.add(&ok(1000, 1100), ms(1000));
        assert_eq!(t.ended(), 2);
        let f = t.take_open(20, ms(500));
        assert!((f.output_tps - 60.0 / 0.5).abs() < 1e-9, "{f:?}");
        assert_eq!(t.ended(), 0);
    }
}
