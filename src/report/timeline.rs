//! A run's request timeline: each request a line from its send to its end with its first
//! token marked, on the run's own time axis (seconds from the start of its measured pass,
//! warmup included). A large run is thinned to every k-th request by index (k doubling
//! until at most `MAX_DRAWN` remain, so the sample is the same whatever the run's size
//! and order), and the chart says so.

use std::fmt::Write;

use super::svg::{escape, open, x_grid, LEFT, RIGHT, TOP, W};
use crate::record::{Outcome, Phase, RequestRecord};

/// Most requests one timeline draws.
pub(crate) const MAX_DRAWN: usize = 400;

/// One drawn request (seconds from the run's start).
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub index: u64,
    pub sent: f64,
    pub first: Option<f64>,
    pub end: f64,
    pub ok: bool,
    pub warmup: bool,
}

/// The thinned requests of one run, folded one record at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Requests seen (warmup and measured).
    pub seen: u64,
    /// Every `stride`-th request by index is drawn.
    pub stride: u64,
    pub bars: Vec<Bar>,
    /// The latest end seen: the run's span.
    pub span: f64,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            seen: 0,
            stride: 1,
            bars: Vec::new(),
            span: 0.0,
        }
    }
}

impl Timeline {
    /// One stored request (priming requests, sent before the measured pass, are not drawn).
    pub fn push(&mut self, r: &RequestRecord) {
        if r.phase == Phase::Priming {
            return;
        }
        self.seen += 1;
        let end = r.end.as_secs_f64();
        self.span = self.span.max(end);
        if r.index % self.stride != 0 {
            return;
        }
        self.bars.push(Bar {
            index: r.index,
            sent: r.sent.as_secs_f64(),
            first: r.first_chunk.map(|d| d.as_secs_f64()),
            end,
            ok: r.outcome == Outcome::Ok,
            warmup: r.phase == Phase::Warmup,
        });
        while self.bars.len() > MAX_DRAWN {
            self.stride *= 2;
            let stride = self.stride;
            self.bars.retain(|b| b.index % stride == 0);
        }
    }

    /// What the chart says of its sample.
    pub fn caption(&self) -> String {
        if self.stride == 1 {
            format!("all {} requests", self.seen)
        } else {
            format!(
                "{} of {} requests drawn (every {}th by index)",
                self.bars.len(),
                self.seen,
                self.stride
            )
        }
    }
}

const PLOT_H: f64 = 320.0;

/// The timeline as an `<svg>` element, on `0..span` seconds (`span` shared with the
/// run's other time charts).
pub(crate) fn timeline_svg(title: &str, t: &Timeline, span: f64) -> String {
    let span = span.max(t.span).max(1e-3);
    let pw = W - LEFT - RIGHT;
    let height = TOP + PLOT_H + 50.0;
    let mut bars: Vec<&Bar> = t.bars.iter().collect();
    bars.sort_by(|a, b| a.sent.total_cmp(&b.sent).then(a.index.cmp(&b.index)));
    let row = PLOT_H / bars.len().max(1) as f64;
    let sx = |x: f64| LEFT + x / span * pw;
    let mut s = open(title, height, LEFT);
    x_grid(&mut s, (0.0, span), &sx, PLOT_H);
    // One path per colour (a request is `M x y H x`, about 20 bytes), not an element each.
    let width = (row * 0.7).clamp(0.6, 4.0);
    let mut paths: [(String, &str); 4] = [
        (String::new(), "#1f77b4"),
        (String::new(), "#aaaaaa"),
        (String::new(), "#d62728"),
        (String::new(), "#ff7f0e"),
    ];
    for (i, b) in bars.iter().enumerate() {
        let y = TOP + row * (i as f64 + 0.5);
        let kind = match (b.ok, b.warmup) {
            (false, _) => 2,
            (true, true) => 1,
            (true, false) => 0,
        };
        let (x0, x1) = (sx(b.sent), sx(b.end).max(sx(b.sent) + 0.5));
        let _ = write!(paths[kind].0, "M{x0:.1} {y:.1}H{x1:.1}");
        if let Some(f) = b.first {
            let tick = width.max(1.5);
            let _ = write!(paths[3].0, "M{:.1} {:.1}V{:.1}", sx(f), y - tick, y + tick);
        }
    }
    for (k, (d, color)) in paths.iter().enumerate() {
        if !d.is_empty() {
            let stroke = if k == 3 { 1.5 } else { width };
            let _ = write!(
                s,
                r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="{stroke:.1}"/>"#
            );
        }
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{PLOT_H}" fill="none" stroke="#444"/><text x="{:.1}" y="{:.1}" text-anchor="middle">time since the run's start (s)</text><text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">requests, by send time</text>"##,
        LEFT + pw / 2.0,
        height - 10.0,
        TOP + PLOT_H / 2.0
    );
    legend(&mut s, LEFT + pw + 14.0, &t.caption());
    s.push_str("</svg>");
    s
}

fn legend(s: &mut String, x: f64, caption: &str) {
    let items = [
        ("#1f77b4", "measured request: send → end"),
        ("#aaaaaa", "warmup request"),
        ("#d62728", "failed request"),
        ("#ff7f0e", "first token"),
    ];
    for (i, (color, text)) in items.iter().enumerate() {
        let y = TOP + 8.0 + 18.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="14" height="4" fill="{color}"/><text x="{:.1}" y="{:.1}">{text}</text>"#,
            y - 4.0,
            x + 20.0,
            y + 2.0
        );
    }
    let _ = write!(
        s,
        r##"<text x="{x:.1}" y="{:.1}" fill="#555">{}</text>"##,
        TOP + 8.0 + 18.0 * 4.5,
        escape(caption)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn record(index: u64) -> RequestRecord {
        RequestRecord {
            index,
            phase: Phase::Measured,
            sent: Duration::from_millis(index),
            first_chunk: Some(Duration::from_millis(index + 5)),
            end: Duration::from_millis(index + 20),
            outcome: Outcome::Ok,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn thins_by_doubling_stride_to_a_bounded_sample() {
        let mut t = Timeline::default();
        for i in 0..10_000 {
            t.push(&record(i));
        }
        assert_eq!(t.seen, 10_000);
        assert!(t.bars.len() <= MAX_DRAWN && t.bars.len() > MAX_DRAWN / 2);
        assert!(t.bars.iter().all(|b| b.index % t.stride == 0));
        assert_eq!(t.stride, 32);
        assert!((t.span - 10.019).abs() < 1e-9);
        assert!(t.caption().contains("of 10000 requests drawn (every 32th"));
        // The same sample whatever the order the rows come in.
        let mut r = Timeline::default();
        for i in (0..10_000).rev() {
            r.push(&record(i));
        }
        let idx = |t: &Timeline| {
            let mut v: Vec<u64> = t.bars.iter().map(|b| b.index).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(idx(&t), idx(&r));
    }

    #[test]
    fn small_runs_are_drawn_whole_and_priming_is_not() {
        let mut t = Timeline::default();
        t.push(&record(0));
        t.push(&RequestRecord {
            phase: Phase::Priming,
            ..record(1)
        });
        assert_eq!((t.seen, t.bars.len()), (1, 1));
        assert_eq!(t.caption(), "all 1 requests");
        let svg = timeline_svg("#1 run", &t, 0.0);
        assert!(svg.contains("#ff7f0e") && svg.contains("all 1 requests"));
    }
}
