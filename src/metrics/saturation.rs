//! Over-saturation of one run at a fixed load (`stop_when = "saturated"`, the book,
//! loads/explore.md "Stopping past saturation"): the run's requests in flight and its TTFT
//! keep rising while its completions stall. Judged live, slice by slice, over the records
//! that ended in each slice ([`SaturationWatch`]), by one rule ([`judge`]). Pure: no clock,
//! no I/O; knows nothing of plans or of the engine (the suite feeds it each record).
//!
//! Not the exploring load's rule (`explore`): that one compares levels held one after
//! the other; this one watches one level whose queue grows without end.

use std::time::Duration;

use super::stats::quantile;
use crate::record::{Outcome, Phase, RequestRecord};

/// The rule's thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Slices judged together: the last this many closed slices.
    pub window: usize,
    /// In flight and TTFT must each rise, by their least-squares line over the window, by
    /// at least this share of their mean over it.
    pub min_rise: f64,
    /// ... with a slope at least this many standard errors above zero.
    pub min_t: f64,
    /// Completions stall: the later half of the window completes at most this share more
    /// than the earlier half (the exploring load's `min_gain` default).
    pub min_gain: f64,
    /// An open loop's arrival rate (requests/s). Known, it replaces the in-flight test: a
    /// window whose requests end at most `1 − min_gain` × this rate leaves the rest queued,
    /// so the queue grows (the in flight read from ended requests lags a growing queue by
    /// those requests' latency, and barely moves where service time dominates latency).
    pub arrivals_per_s: Option<f64>,
}

impl Default for Rule {
    fn default() -> Rule {
        Rule {
            window: 10,
            min_rise: 0.5,
            min_t: 3.0,
            min_gain: 0.1,
            arrivals_per_s: None,
        }
    }
}

/// What one slice saw, from the requests that ended in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SliceFigures {
    /// Seconds from the pass's start to the slice's start.
    pub start_s: f64,
    /// Requests in flight by Little's law: the latencies of the requests that ended in
    /// the slice, summed, over the slice's length (their rate × their mean latency).
    pub in_flight: f64,
    /// Median TTFT (ms) of the successful requests that ended in it.
    pub ttft_p50_ms: Option<f64>,
    /// Successful requests that ended in it.
    pub completions: u64,
    /// Requests that ended in it, failed ones included (not cancelled ones).
    pub ended: u64,
}

/// Why a run was judged saturated: the window's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Saturation {
    /// Seconds from the pass's start to the end of the window judged.
    pub at_s: f64,
    /// In flight, by the window's line, at its first and its last slice.
    pub in_flight: (f64, f64),
    /// TTFT p50 (ms), by the window's line, at its first and its last slice.
    pub ttft_ms: (f64, f64),
    /// Completions per second in the earlier and the later half of the window.
    pub completions_per_s: (f64, f64),
    /// An open loop's arrival rate, when the rule judged against it.
    pub arrivals_per_s: Option<f64>,
}

impl Saturation {
    /// The sentence stored with the run.
    pub fn text(&self) -> String {
        let queue = match self.arrivals_per_s {
            Some(rate) => format!("requests arrived at {rate:.1}/s"),
            None => format!(
                "in flight rose {:.1} → {:.1}",
                self.in_flight.0, self.in_flight.1
            ),
        };
        format!(
            "stopped at {:.1}s on over-saturation: {queue}, TTFT p50 {:.0} → {:.0} ms, \
             while completions went {:.1} → {:.1}/s; the server cannot keep up with this \
             load (lower it, or read its capacity from an exploring load)",
            self.at_s,
            self.ttft_ms.0,
            self.ttft_ms.1,
            self.completions_per_s.0,
            self.completions_per_s.1,
        )
    }
}

/// A least-squares line over `(x, y)`: its value at the first and the last x, and the
/// slope's t statistic (none for fewer than 3 points or no spread in x).
fn line(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let sse: f64 = points
        .iter()
        .map(|p| (p.1 - my - slope * (p.0 - mx)).powi(2))
        .sum();
    let se = (sse / (n - 2.0) / sxx).sqrt();
    let t = if se > 0.0 {
        slope / se
    } else if slope > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let (x0, x1) = (points[0].0, points[points.len() - 1].0);
    Some((my + slope * (x0 - mx), my + slope * (x1 - mx), t))
}

/// Whether `points` rise by the rule: their line's rise over them is at least
/// `min_rise` × their mean, its slope `min_t` standard errors above zero. The line's
/// first and last values when they do.
fn rises(rule: &Rule, points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let (first, last, t) = line(points)?;
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    (mean > 0.0 && last - first >= rule.min_rise * mean && t >= rule.min_t)
        .then_some((first.max(0.0), last))
}

/// Whether `points` rise by the over-saturation rule's test of a rising series (its
/// least-squares line rises by at least half its mean, the slope three standard errors
/// above zero): an exploring load's test of the server's queue.
pub fn rising(points: &[(f64, f64)]) -> bool {
    rises(&Rule::default(), points).is_some()
}

/// The rule over the last `rule.window` slices of `slices` (none while fewer): saturated
/// when in flight rises, TTFT p50 rises (over the slices that have one, at least half the
/// window), and the later half of the window completes at most `min_gain` more than the
/// earlier half.
pub fn judge(rule: &Rule, slices: &[SliceFigures], width_s: f64) -> Option<Saturation> {
    let w = rule.window.max(4);
    let window = slices.get(slices.len().checked_sub(w)?..)?;
    let flight: Vec<(f64, f64)> = window.iter().map(|s| (s.start_s, s.in_flight)).collect();
    let ttft: Vec<(f64, f64)> = window
        .iter()
        .filter_map(|s| Some((s.start_s, s.ttft_p50_ms?)))
        .collect();
    if ttft.len() * 2 < w {
        return None;
    }
    let half = w / 2;
    let done = |part: &[SliceFigures]| {
        part.iter().map(|s| s.completions).sum::<u64>() as f64 / (part.len() as f64 * width_s)
    };
    let (early, late) = (done(&window[..half]), done(&window[w - half..]));
    if late > (1.0 + rule.min_gain) * early {
        return None;
    }
    let in_flight = match rule.arrivals_per_s {
        Some(rate) => {
            let ended = window.iter().map(|s| s.ended).sum::<u64>() as f64;
            if ended / (w as f64 * width_s) > (1.0 - rule.min_gain) * rate {
                return None;
            }
            line(&flight).map(|(first, last, _)| (first.max(0.0), last.max(0.0)))?
        }
        None => rises(rule, &flight)?,
    };
    let ttft_ms = rises(rule, &ttft)?;
    Some(Saturation {
        at_s: window[w - 1].start_s + width_s,
        in_flight,
        ttft_ms,
        completions_per_s: (early, late),
        arrivals_per_s: rule.arrivals_per_s,
    })
}

/// Per-slice sums while the slice is open.
#[derive(Debug, Clone, Default)]
struct Open {
    busy_s: f64,
    ok: u64,
    ended: u64,
    ttfts_ms: Vec<f64>,
}

/// The rule applied live: told each record of a pass as it completes (warmup and
/// measured, in about the order they end), it closes a slice once a record ends two
/// slices later (one slice of lag for stragglers) and judges the window at each close.
#[derive(Debug)]
pub(crate) struct SaturationWatch {
    rule: Rule,
    width: Duration,
    open: Vec<Open>,
    closed: Vec<SliceFigures>,
    fired: Option<Saturation>,
}

impl SaturationWatch {
    pub fn new(rule: Rule, width: Duration) -> SaturationWatch {
        SaturationWatch {
            rule,
            width: width.max(Duration::from_millis(1)),
            open: Vec::new(),
            closed: Vec::new(),
            fired: None,
        }
    }

    /// What fired the rule, once it has.
    pub(crate) fn fired(&self) -> Option<Saturation> {
        self.fired
    }

    /// A completed record; the saturation it showed, the first time the rule fires.
    pub fn observe(&mut self, r: &RequestRecord) -> Option<Saturation> {
        if self.fired.is_some() || r.phase == Phase::Priming || r.outcome == Outcome::Cancelled {
            return None;
        }
        let k = (r.end.as_nanos() / self.width.as_nanos()) as usize;
        if k < self.closed.len() {
            return None;
        }
        let at = k - self.closed.len();
        if self.open.len() <= at {
            self.open.resize(at + 1, Open::default());
        }
        let slot = &mut self.open[at];
        slot.busy_s += r.end.saturating_sub(r.sent).as_secs_f64();
        slot.ended += 1;
        if r.outcome == Outcome::Ok {
            slot.ok += 1;
            if let Some(t) = r.ttft() {
                slot.ttfts_ms.push(t.as_secs_f64() * 1e3);
            }
        }
        while self.open.len() > 2 && self.fired.is_none() {
            self.close();
        }
        self.fired
    }

    /// Closes the oldest open slice and judges the window.
    fn close(&mut self) {
        let mut s = self.open.remove(0);
        let width_s = self.width.as_secs_f64();
        s.ttfts_ms.sort_by(f64::total_cmp);
        self.closed.push(SliceFigures {
            start_s: self.closed.len() as f64 * width_s,
            in_flight: s.busy_s / width_s,
            ttft_p50_ms: quantile(&s.ttfts_ms, 0.5),
            completions: s.ok,
            ended: s.ended,
        });
        self.fired = judge(&self.rule, &self.closed, width_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(k: usize, in_flight: f64, ttft: f64, completions: u64) -> SliceFigures {
        SliceFigures {
            start_s: k as f64,
            in_flight,
            ttft_p50_ms: Some(ttft),
            completions,
            ended: completions,
        }
    }

    #[test]
    fn a_growing_queue_with_flat_completions_is_saturated() {
        // In flight 10, 20, .. 100; TTFT 100 .. 1000 ms; 50 completions a second.
        let s: Vec<_> = (0..10)
            .map(|k| slice(k, 10.0 * (k + 1) as f64, 100.0 * (k + 1) as f64, 50))
            .collect();
        let got = judge(&Rule::default(), &s, 1.0).unwrap();
        assert!((got.in_flight.0 - 10.0).abs() < 1e-9 && (got.in_flight.1 - 100.0).abs() < 1e-9);
        assert!((got.ttft_ms.1 - 1000.0).abs() < 1e-9);
        assert_eq!(got.completions_per_s, (50.0, 50.0));
        assert_eq!(got.at_s, 10.0);
        // Nine slices are not yet a window.
        assert_eq!(judge(&Rule::default(), &s[..9], 1.0), None);
    }

    #[test]
    fn rising_completions_or_flat_latency_are_not_saturation() {
        // The same queue, but completions double: the server keeps up (a fill, a burst).
        let s: Vec<_> = (0..10)
            .map(|k| {
                slice(
                    k,
                    10.0 * (k + 1) as f64,
                    100.0 * (k + 1) as f64,
                    20 + 5 * k as u64,
                )
            })
            .collect();
        assert_eq!(judge(&Rule::default(), &s, 1.0), None);
        // A steady run with noise: in flight and TTFT wobble around a level.
        let wobble = [1.0, 1.2, 0.9, 1.1, 0.8, 1.2, 1.0, 0.9, 1.1, 1.0];
        let s: Vec<_> = wobble
            .iter()
            .enumerate()
            .map(|(k, f)| slice(k, 8.0 * f, 80.0 * f, 100))
            .collect();
        assert_eq!(judge(&Rule::default(), &s, 1.0), None);
        // A rise of less than half the mean is not enough (20 → 26).
        let s: Vec<_> = (0..10)
            .map(|k| slice(k, 20.0 + 0.6 * k as f64, 200.0 + 6.0 * k as f64, 100))
            .collect();
        assert_eq!(judge(&Rule::default(), &s, 1.0), None);
    }

    /// vLLM's CPU build at 24 requests/s (`stop_when` against it, 2026-12-02): each request
    /// spends ~11 s in service, so the in flight read from ended requests rises only with
    /// their short queue wait (130 → 145) while 13 requests a second pile up unseen.
    fn service_bound(k: usize) -> SliceFigures {
        slice(
            k,
            130.0 + 1.5 * k as f64,
            1000.0 + 120.0 * k as f64,
            11 - (k % 2) as u64,
        )
    }

    #[test]
    fn an_open_loop_ending_fewer_than_arrive_is_saturated_though_in_flight_lags() {
        let s: Vec<_> = (0..10).map(service_bound).collect();
        assert_eq!(
            judge(&Rule::default(), &s, 1.0),
            None,
            "the lagging estimate alone"
        );
        let open = Rule {
            arrivals_per_s: Some(24.0),
            ..Rule::default()
        };
        let got = judge(&open, &s, 1.0).expect("10.5 ended a second against 24 arriving");
        assert_eq!(got.arrivals_per_s, Some(24.0));
        assert!(
            got.text().contains("requests arrived at 24.0/s"),
            "{}",
            got.text()
        );
        // At 11 a second the same server keeps up: ending 10.5 is within 10% of 11.
        let near = Rule {
            arrivals_per_s: Some(11.0),
            ..Rule::default()
        };
        assert_eq!(judge(&near, &s, 1.0), None);
        // Ending fewer than arrive but with a flat TTFT is not saturation (yet).
        let flat: Vec<_> = (0..10).map(|k| slice(k, 130.0, 1000.0, 10)).collect();
        assert_eq!(judge(&open, &flat, 1.0), None);
    }

    fn rec(sent_ms: u64, ttft_ms: u64, end_ms: u64) -> RequestRecord {
        let ms = Duration::from_millis;
        RequestRecord {
            phase: Phase::Measured,
            sent: ms(sent_ms),
            first_chunk: Some(ms(sent_ms + ttft_ms)),
            content_times: vec![ms(sent_ms + ttft_ms)],
            end: ms(end_ms),
            outcome: Outcome::Ok,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn the_watch_fires_on_an_overloaded_open_loop_and_not_on_a_steady_one() {
        // Open loop at 40/s on a server that completes 20/s, one at a time in order: the
        // k-th request is sent at 25k ms and ends at 50(k+1) ms.
        let mut watch = SaturationWatch::new(Rule::default(), Duration::from_millis(200));
        let mut fired = None;
        for k in 0..400u64 {
            let (sent, end) = (25 * k, 50 * (k + 1));
            fired = fired.or(watch.observe(&rec(sent, end - sent - 10, end)));
        }
        let fired = fired.expect("an overloaded open loop saturates");
        assert!(fired.at_s <= 2.6, "{fired:?}");
        assert!(fired.in_flight.1 > fired.in_flight.0 * 1.5);
        // Steady: 40/s sent, 50 ms each.
        let mut watch = SaturationWatch::new(Rule::default(), Duration::from_millis(200));
        for k in 0..400u64 {
            assert_eq!(watch.observe(&rec(25 * k, 20, 25 * k + 50)), None);
        }
    }
}
