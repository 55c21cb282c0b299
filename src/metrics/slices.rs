//! Time slices of a run: how it evolved, slice by slice (default 1 s wide).
//!
//! Time 0 is the run's first measured send (the start of `duration_s`); the slices tile
//! the run up to its last measured end (the last one may be shorter), and only measured
//! requests count. Per slice:
//!
//! - `ok` / `failed`: measured requests that *ended* in it; `rps` = `ok` / its length.
//! - `output_tps`: output tokens that arrived in it, over its length. A request whose
//!   stored content chunks are exactly as many as its output tokens (one token a chunk,
//!   as vLLM and the simulator stream) counts each token at its chunk's arrival; any
//!   other counts all its tokens where it ended (`token_times`: the one rule, the steady
//!   window's too).
//! - `in_flight`: the time-weighted mean of requests between their send and their end
//!   over the slice (Σ overlap / length).
//! - TTFT and ITL p50 / p99 of the successful requests that ended in it, under the run's
//!   metric definitions, by `stats`' one percentile rule.
//!
//! `SliceFold` takes the records in order of their end (the store reads them so); its
//! memory is the slices' counters plus the columns of the one slice still open, never a
//! run's records. A record that arrives after its slice was closed still counts in every
//! counter but not in that slice's percentiles (`late`).

use std::time::Duration;

use super::columns::{Gaps, Times};
use super::definitions::{timing, MetricDefinitions};
use super::stats::Distribution;
use crate::record::{Outcome, Phase, RequestRecord};

/// Most slices of one run: a longer run gets wider slices (a whole multiple of the width
/// asked for), so the slices stay a few MB whatever the run's length.
pub(crate) const MAX_SLICES: usize = 100_000;

/// Calls `f(time, tokens)` for the output tokens of a successful record: each content
/// chunk's tokens at its arrival when the stream's counts add up to the output tokens
/// (those after the last content chunk at the last chunk), else one token at each
/// content chunk when the chunks are exactly as many as the tokens, else all of them at
/// the record's end.
pub(crate) fn token_times(r: &RequestRecord, mut f: impl FnMut(Duration, f64)) {
    let Some((n, _)) = r.output_tokens() else {
        return;
    };
    let counted = r
        .stream_tokens
        .as_ref()
        .filter(|s| s.total == n && s.at_content.len() == r.content_times.len());
    if let Some(s) = counted.filter(|_| n > 0) {
        for (t, k) in r.content_times.iter().zip(s.per_content()) {
            f(*t, f64::from(k));
        }
        let tail = n.saturating_sub(s.through_last_content());
        if tail > 0 {
            f(r.last_chunk.unwrap_or(r.end), f64::from(tail));
        }
    } else if n > 0 && r.content_times.len() == n as usize {
        r.content_times.iter().for_each(|t| f(*t, 1.0));
    } else if n > 0 {
        f(r.end, f64::from(n));
    }
}

/// One slice of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Seconds from the run's first measured send.
    pub start_s: f64,
    /// Its length in seconds (the width, or less for the last slice).
    pub len_s: f64,
    pub ok: u64,
    pub failed: u64,
    pub rps: f64,
    pub output_tps: f64,
    pub in_flight: f64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub itl_p50_ms: Option<f64>,
    pub itl_p99_ms: Option<f64>,
}

/// A span of a run in seconds from its first measured send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub start_s: f64,
    pub end_s: f64,
}

/// A run's slices.
#[derive(Debug, Clone, PartialEq)]
pub struct Slices {
    /// The slices' width (the one asked for, widened past `MAX_SLICES`).
    pub width_s: f64,
    /// Where time 0 is on the records' time base (seconds from the measured pass's
    /// start), to align other series (the server's) with the slices.
    pub origin_s: f64,
    pub slices: Vec<Slice>,
    /// The steady-state window (`metrics::steady`), when the run has one.
    pub steady: Option<Span>,
    /// Records that ended in a slice already closed (out of end order): counted, but not
    /// in percentiles.
    pub late: u64,
}

/// Per-slice counters, in any order.
#[derive(Debug, Clone, Default)]
struct Counters {
    ok: u64,
    failed: u64,
    tokens: f64,
    /// Nanoseconds of requests in flight inside the slice, from requests that start or
    /// end in it.
    busy_ns: f64,
    /// Requests covering whole slices, as a difference array (+1 where they start
    /// covering, −1 where they stop).
    whole: i64,
}

/// The slice still taking percentiles.
#[derive(Debug)]
struct Open {
    at: usize,
    ttft: Times,
    itl: Gaps,
}

/// A run's slices folded from its records in end order.
#[derive(Debug)]
pub(crate) struct SliceFold {
    width_ns: u64,
    origin: Duration,
    span_ns: u64,
    definitions: MetricDefinitions,
    counters: Vec<Counters>,
    percentiles: Vec<[Option<f64>; 4]>,
    open: Option<Open>,
    late: u64,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl SliceFold {
    /// Slices of `width` over `[first_send, last_end]` (the run's measured span).
    pub fn new(
        width: Duration,
        (first_send, last_end): (Duration, Duration),
        definitions: MetricDefinitions,
    ) -> SliceFold {
        let span_ns = ns(last_end.saturating_sub(first_send)).max(1);
        let mut width_ns = ns(width).max(1);
        let wanted = span_ns.div_ceil(width_ns);
        if wanted > MAX_SLICES as u64 {
            width_ns *= wanted.div_ceil(MAX_SLICES as u64);
        }
        let n = span_ns.div_ceil(width_ns) as usize;
        SliceFold {
            width_ns,
            origin: first_send,
            span_ns,
            definitions,
            counters: vec![Counters::default(); n + 1],
            percentiles: vec![[None; 4]; n],
            open: None,
            late: 0,
        }
    }

    /// The slice of time `t` (on the records' time base), clamped to the run.
    fn at(&self, t: Duration) -> usize {
        let off = ns(t.saturating_sub(self.origin)).min(self.span_ns);
        ((off / self.width_ns) as usize).min(self.percentiles.len().saturating_sub(1))
    }

    fn offset(&self, t: Duration) -> u64 {
        ns(t.saturating_sub(self.origin)).min(self.span_ns)
    }

    /// Adds one record (only measured ones count).
    pub fn add(&mut self, r: &RequestRecord) {
        if r.phase != Phase::Measured || self.percentiles.is_empty() {
            return;
        }
        let end = self.at(r.end);
        self.add_in_flight(r);
        if r.outcome != Outcome::Ok {
            self.counters[end].failed += 1;
            return;
        }
        self.counters[end].ok += 1;
        token_times(r, |t, n| {
            let k = self.at(t);
            self.counters[k].tokens += n;
        });
        if self.open.as_ref().is_some_and(|o| o.at > end) {
            self.late += 1;
            return;
        }
        if self.open.as_ref().is_some_and(|o| o.at < end) {
            self.close();
        }
        let open = self.open.get_or_insert_with(|| Open {
            at: end,
            ttft: Times::default(),
            itl: Gaps::default(),
        });
        let t = timing(r, self.definitions);
        if let Some(x) = t.ttft {
            open.ttft.push(x);
        }
        t.per_token().for_each(|(g, k)| open.itl.push_n(g, k));
    }

    /// The time between send and end, spread over the slices it covers.
    fn add_in_flight(&mut self, r: &RequestRecord) {
        let (s, e) = (self.offset(r.sent), self.offset(r.end.max(r.sent)));
        let (i, j) = (self.at(r.sent), self.at(r.end.max(r.sent)));
        let w = self.width_ns;
        if i == j {
            self.counters[i].busy_ns += (e - s) as f64;
            return;
        }
        self.counters[i].busy_ns += ((i as u64 + 1) * w - s) as f64;
        self.counters[j].busy_ns += (e - j as u64 * w) as f64;
        self.counters[i + 1].whole += 1;
        self.counters[j].whole -= 1;
    }

    /// Reads the open slice's percentiles.
    fn close(&mut self) {
        let Some(open) = self.open.take() else { return };
        let ttft = open.ttft.sorted();
        let itl = open.itl.finish();
        self.percentiles[open.at] = [
            ttft.quantile(0.5),
            ttft.quantile(0.99),
            itl.quantile(0.5),
            itl.quantile(0.99),
        ];
    }

    /// The slices; `steady` is the run's window on the records' time base.
    pub fn finish(mut self, steady: Option<(Duration, Duration)>) -> Slices {
        self.close();
        let w = self.width_ns;
        let mut whole = 0i64;
        let mut slices = Vec::with_capacity(self.percentiles.len());
        for (k, p) in self.percentiles.iter().enumerate() {
            let c = &self.counters[k];
            whole += c.whole;
            let start = k as u64 * w;
            let len = (self.span_ns.min(start + w) - start).max(1) as f64;
            let len_s = len / 1e9;
            slices.push(Slice {
                start_s: start as f64 / 1e9,
                len_s,
                ok: c.ok,
                failed: c.failed,
                rps: c.ok as f64 / len_s,
                output_tps: c.tokens / len_s,
                in_flight: (c.busy_ns + whole as f64 * len) / len,
                ttft_p50_ms: p[0],
                ttft_p99_ms: p[1],
                itl_p50_ms: p[2],
                itl_p99_ms: p[3],
            });
        }
        let secs = |t: Duration| t.saturating_sub(self.origin).as_secs_f64();
        Slices {
            width_s: w as f64 / 1e9,
            origin_s: self.origin.as_secs_f64(),
            slices,
            steady: steady.map(|(a, b)| Span {
                start_s: secs(a),
                end_s: secs(b),
            }),
            late: self.late,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Usage;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    /// A measured request sent at `sent` with one-token chunks at `chunks`, ending at
    /// the last (its output tokens from usage: `tokens`).
    fn rec(sent: u64, chunks: &[u64], tokens: u32, outcome: Outcome) -> RequestRecord {
        RequestRecord {
            phase: Phase::Measured,
            sent: ms(sent),
            first_chunk: chunks.first().map(|&c| ms(c)),
            content_times: chunks.iter().map(|&c| ms(c)).collect(),
            end: ms(chunks.last().copied().unwrap_or(sent + 5)),
            outcome,
            usage: Usage {
                completion_tokens: Some(tokens),
                ..Usage::default()
            },
            ..RequestRecord::default()
        }
    }

    #[test]
    fn slices_by_hand() {
        // Span 0 .. 2500 ms in slices of 1 s: [0,1), [1,2), [2,2.5).
        let recs = [
            // 0..400: 4 one-token chunks, all in slice 0; TTFT 100, gaps 100.
            rec(0, &[100, 200, 300, 400], 4, Outcome::Ok),
            // 500..1500: chunks at 600 and 1500, 2 tokens: one token in each slice.
            rec(500, &[600, 1500], 2, Outcome::Ok),
            // 900..2500: 3 tokens in 2 chunks: all 3 counted where it ends (slice 2).
            rec(900, &[1200, 2500], 3, Outcome::Ok),
            // A failure at 1000..1005 ends in slice 1.
            rec(1000, &[], 0, Outcome::Http),
        ];
        let mut fold = SliceFold::new(ms(1000), (ms(0), ms(2500)), MetricDefinitions::Perfplan);
        let mut by_end = recs.to_vec();
        by_end.sort_by_key(|r| r.end);
        by_end.iter().for_each(|r| fold.add(r));
        let s = fold.finish(Some((ms(500), ms(1000))));
        assert_eq!(s.slices.len(), 3);
        let [a, b, c] = [&s.slices[0], &s.slices[1], &s.slices[2]];
        assert_eq!((a.ok, a.failed, b.ok, b.failed, c.ok), (1, 0, 1, 1, 1));
        assert!((c.len_s - 0.5).abs() < 1e-12 && (c.rps - 2.0).abs() < 1e-9);
        assert_eq!((a.output_tps, b.output_tps, c.output_tps), (5.0, 1.0, 6.0));
        // In flight, slice 0: 400 + 500 (500..1000) + 100 (900..1000) ms = 1.0 request.
        assert!((a.in_flight - 1.0).abs() < 1e-9, "{}", a.in_flight);
        // Slice 1: 500 (1000..1500) + 1000 (whole) + 5 (the failure) ms = 1.505.
        assert!((b.in_flight - 1.505).abs() < 1e-9, "{}", b.in_flight);
        // Slice 2: 500 ms of the last one over 500 ms = 1.
        assert!((c.in_flight - 1.0).abs() < 1e-9, "{}", c.in_flight);
        assert_eq!((a.ttft_p50_ms, a.itl_p99_ms), (Some(100.0), Some(100.0)));
        assert_eq!((b.ttft_p50_ms, b.itl_p50_ms), (Some(100.0), Some(900.0)));
        assert_eq!(c.ttft_p99_ms, Some(300.0));
        assert_eq!(
            s.steady,
            Some(Span {
                start_s: 0.5,
                end_s: 1.0
            })
        );
        assert_eq!(s.late, 0);
    }

    #[test]
    fn a_long_run_gets_wider_slices_and_late_records_are_counted() {
        let span = (ms(0), Duration::from_secs(3 * MAX_SLICES as u64));
        let mut fold = SliceFold::new(ms(1000), span, MetricDefinitions::Perfplan);
        fold.add(&rec(7_000, &[7_100], 1, Outcome::Ok));
        fold.add(&rec(0, &[100], 1, Outcome::Ok));
        let s = fold.finish(None);
        assert_eq!(s.width_s, 3.0);
        assert_eq!(s.slices.len(), MAX_SLICES);
        assert_eq!((s.slices[0].ok, s.late), (1, 1));
        assert_eq!(s.slices[0].ttft_p50_ms, None);
        assert_eq!(s.slices[2].ttft_p50_ms, Some(100.0));
    }
}
