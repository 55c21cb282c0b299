//! Inline SVG line charts drawn by hand (no plotting crate, no script, no network):
//! axes with round ticks (or ticks at the tiers a suite ran, on a log scale when they
//! span a wide range), shaded bands (the steady-state window), one line per series told
//! apart by colour, dash and marker shape so identical lines stay visible, a legend, and
//! a one-line "how to read" under each chart (`figure`). Text is 12 px or larger at the
//! chart's natural width.

use std::fmt::Write;

use super::svg_series::{band_legend, series_svg, Placed};

/// One line of a chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Draw markers at the points (off for dense CDF lines).
    pub markers: bool,
    /// A short label beside each point (the tier a point stands for); empty for none.
    pub labels: Vec<String>,
    /// Markers only, no line (points in no order, such as those off a Pareto front).
    pub scatter: bool,
}

/// A shaded span of the x axis (the steady-state window), named in the legend.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Band {
    pub name: String,
    pub from: f64,
    pub to: f64,
}

/// A chart to draw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// The x axis's span when fixed (charts of one run's time share its span); `None`
    /// fits the points.
    pub x_range: Option<(f64, f64)>,
    /// Ticks at these x values (the tiers a suite ran) instead of round ones; when they
    /// are all positive and span 16× or more, the x axis is logarithmic.
    pub x_ticks: Option<Vec<f64>>,
    /// Shaded spans of x, drawn under the lines.
    pub bands: Vec<Band>,
    /// One line under the chart saying how to read it.
    pub how: String,
}

pub(crate) const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
pub(crate) const W: f64 = 1000.0;
const H: f64 = 380.0;
pub(crate) const LEFT: f64 = 70.0;
/// The widest legend, beside the plot (a shorter one leaves the plot more room).
pub(crate) const RIGHT: f64 = 380.0;
pub(crate) const TOP: f64 = 36.0;
const BOTTOM: f64 = 50.0;

/// An `<svg>` element's opening, `W` wide and `height` high (scaled down to the page's
/// width), on white, with `title` as its tooltip and heading (at `title_x`): every chart
/// of the page starts so. The caller closes it with `</svg>`.
pub(crate) fn open(title: &str, height: f64, title_x: f64) -> String {
    let t = escape(title);
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" height="{height}" style="max-width:100%;height:auto" role="img" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{W}" height="{height}" fill="white"/><text x="{title_x}" y="20" font-size="15" font-weight="bold">{t}</text>"#
    )
}

/// The x axis's round ticks over `lo..=hi`: a grid line down a plot `plot_h` high (from
/// `TOP`) and the tick's label under it; `sx` places a value.
pub(crate) fn x_grid(s: &mut String, (lo, hi): (f64, f64), sx: &dyn Fn(f64) -> f64, plot_h: f64) {
    for t in ticks(lo, hi) {
        let x = sx(t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 16.0,
            tick_label(t)
        );
    }
}

/// A chart in a `<figure>` with its "how to read" line as the caption.
pub fn figure(svg: &str, how: &str) -> String {
    if how.is_empty() {
        return format!("<figure>{svg}</figure>");
    }
    format!(
        "<figure>{svg}<figcaption>How to read: {}</figcaption></figure>",
        escape(how)
    )
}

/// A line chart in its figure.
pub(crate) fn line_figure(chart: &Chart) -> String {
    figure(&line_chart(chart), &chart.how)
}

/// Escapes text for XML.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick values covering `lo..=hi` (about five of them).
pub fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).abs().max(f64::EPSILON);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() * step;
    (0..=12)
        .map(|k| first + step * k as f64)
        .take_while(|t| *t <= hi + step * 1e-9)
        .collect()
}

pub(crate) fn tick_label(v: f64) -> String {
    let s = super::format::number(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn bounds(chart: &Chart) -> ((f64, f64), (f64, f64)) {
    let pts = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(x, y)| x.is_finite() && y.is_finite());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0_f64, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    for &t in chart.x_ticks.iter().flatten().filter(|t| t.is_finite()) {
        x0 = x0.min(t);
        x1 = x1.max(t);
    }
    if let Some(range) = chart.x_range {
        (x0, x1) = range;
        y0 = y0.min(0.0);
        if y1 == f64::MIN {
            y1 = 1.0;
        }
    }
    if x0 > x1 {
        return ((0.0, 1.0), (0.0, 1.0));
    }
    if (x1 - x0).abs() < f64::EPSILON {
        (x0, x1) = (x0 - 1.0, x1 + 1.0);
    }
    if y1 == f64::MIN || (y1 - y0).abs() < f64::EPSILON {
        y1 = y0 + 1.0;
    }
    ((x0, x1), (y0, y1 * 1.05))
}

/// Where an x value falls across the plot (0 to 1): linear, or logarithmic when the
/// chart's ticks are tiers that span 16× or more (1 … 256 would crowd the left edge).
#[derive(Debug, Clone, Copy)]
pub(crate) struct XScale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl XScale {
    fn of(chart: &Chart, (x0, x1): (f64, f64)) -> XScale {
        let log = x0 > 0.0
            && chart.x_ticks.as_ref().is_some_and(|t| {
                let lo = t.iter().copied().fold(f64::MAX, f64::min);
                let hi = t.iter().copied().fold(f64::MIN, f64::max);
                lo > 0.0 && hi / lo >= 16.0
            });
        if log {
            // A little room either side so the first and last tiers' markers show whole.
            XScale {
                lo: (x0 / 1.2).ln(),
                hi: (x1 * 1.2).ln(),
                log,
            }
        } else {
            XScale {
                lo: x0,
                hi: x1,
                log,
            }
        }
    }

    fn frac(self, x: f64) -> f64 {
        let v = if self.log {
            x.max(f64::MIN_POSITIVE).ln()
        } else {
            x
        };
        (v - self.lo) / (self.hi - self.lo)
    }
}

/// Ticks at the given values (the tiers), a label only where it clears the last one.
fn tier_grid(s: &mut String, ticks: &[f64], sx: &dyn Fn(f64) -> f64, plot_h: f64) {
    let mut ticks: Vec<f64> = ticks.iter().copied().filter(|t| t.is_finite()).collect();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    let mut last_label = f64::MIN;
    for t in ticks {
        let x = sx(t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/>"##,
            TOP + plot_h
        );
        let label = tick_label(t);
        // About 7 px a character at 12 px: a label closer than its own width is skipped.
        if x - last_label >= 7.0 * label.len() as f64 + 6.0 {
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
                TOP + plot_h + 16.0
            );
            last_label = x;
        }
    }
}

/// The chart as an `<svg>` element.
pub(crate) fn line_chart(chart: &Chart) -> String {
    let ((x0, x1), (y0, y1)) = bounds(chart);
    let (pw, ph) = (W - LEFT - legend_width(chart), H - TOP - BOTTOM);
    // The legend may need more room than the plot.
    let entries = chart.series.len() + chart.bands.len();
    let height = H.max(TOP + 18.0 * entries as f64 + 20.0);
    let scale = XScale::of(chart, (x0, x1));
    let sx = |x: f64| LEFT + scale.frac(x) * pw;
    let sy = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
    let mut s = String::new();
    s.push_str(&open(&chart.title, height, LEFT));
    match &chart.x_ticks {
        Some(ticks) => tier_grid(&mut s, ticks, &sx, ph),
        None => x_grid(&mut s, (x0, x1), &sx, ph),
    }
    for t in ticks(y0, y1) {
        let y = sy(t);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            tick_label(t)
        );
    }
    for band in &chart.bands {
        let (a, b) = (sx(band.from).max(LEFT), sx(band.to).min(LEFT + pw));
        if b > a {
            let _ = write!(
                s,
                r##"<rect class="band" x="{a:.1}" y="{TOP}" width="{:.1}" height="{ph}" fill="#7f7f7f" fill-opacity="0.16"><title>{}</title></rect>"##,
                b - a,
                escape(&band.name)
            );
        }
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}{}</text>"#,
        LEFT + pw / 2.0,
        H - 10.0, // the x label sits under the plot, whatever the legend's height
        escape(&chart.x_label),
        if scale.log { " (log scale)" } else { "" }
    );
    let _ = write!(
        s,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        escape(&chart.y_label)
    );
    let mut placed = Placed::default();
    for (i, series) in chart.series.iter().enumerate() {
        series_svg(&mut s, (i, series), (&sx, &sy), (pw, &mut placed));
    }
    for (k, band) in chart.bands.iter().enumerate() {
        band_legend(&mut s, chart.series.len() + k, &band.name, pw);
    }
    s.push_str("</svg>");
    s
}

/// Room for the legend: its longest name (at most 56 characters are shown) at about
/// 7 px a character, between 160 px and `RIGHT`.
fn legend_width(chart: &Chart) -> f64 {
    let longest = chart
        .series
        .iter()
        .map(|s| s.name.chars().count())
        .chain(chart.bands.iter().map(|b| b.name.chars().count() + 8)) // `shaded: `
        .map(|n| n.min(57))
        .max()
        .unwrap_or(0);
    (48.0 + 7.0 * longest as f64).clamp(160.0, RIGHT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            ticks(0.0, 1.0),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        let t = ticks(13.0, 1234.0);
        assert!(t.len() >= 3 && t.len() <= 7, "{t:?}");
    }

    #[test]
    fn chart_escapes_names() {
        let svg = line_chart(&Chart {
            title: "a<b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                name: "s&t".into(),
                points: vec![(1.0, 2.0), (2.0, 3.0)],
                markers: true,
                scatter: false,
                labels: vec!["c=1".into(), "c<2".into()],
            }],
            ..Chart::default()
        });
        assert!(svg.contains("a&lt;b") && svg.contains("s&amp;t") && svg.contains("<polyline"));
        assert!(svg.contains(">c=1</text>") && svg.contains(">c&lt;2</text>"));
    }
    fn tiers_chart(ticks: &[f64]) -> Chart {
        let series = |name: &str| Series {
            name: name.into(),
            points: ticks.iter().map(|&x| (x, x)).collect(),
            markers: true,
            scatter: false,
            labels: ticks.iter().map(|x| format!("c={x}")).collect(),
        };
        Chart {
            title: "t".into(),
            series: vec![series("a"), series("b")],
            x_ticks: Some(ticks.to_vec()),
            bands: vec![Band {
                name: "steady".into(),
                from: ticks[0],
                to: ticks[1],
            }],
            ..Chart::default()
        }
    }

    /// The numbers under the plot: the x ticks' labels.
    fn x_tick_labels(svg: &str) -> Vec<String> {
        svg.split("text-anchor=\"middle\">")
            .skip(1)
            .map(|t| t[..t.find('<').unwrap_or(0)].to_string())
            .filter(|t| t.parse::<f64>().is_ok())
            .collect()
    }

    #[test]
    fn tiers_are_the_ticks_and_a_wide_span_is_logarithmic() {
        let svg = line_chart(&tiers_chart(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]));
        assert_eq!(x_tick_labels(&svg), ["1", "2", "4", "8", "16", "32", "64"]);
        assert!(svg.contains("(log scale)"));
        // Evenly spaced on a log scale: the tick lines' x positions step alike.
        let xs: Vec<f64> = svg
            .split("<line x1=\"")
            .skip(1)
            .map(|l| l[..l.find('"').unwrap()].parse().unwrap())
            .filter(|&x: &f64| x > LEFT)
            .take(7)
            .collect();
        let steps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(steps.iter().all(|d| (d - steps[0]).abs() < 0.2), "{xs:?}");
        let linear = line_chart(&tiers_chart(&[2.0, 4.0, 6.0]));
        assert_eq!(x_tick_labels(&linear), ["2", "4", "6"]);
        assert!(!linear.contains("(log scale)"));
    }

    #[test]
    fn bands_are_shaded_and_coinciding_labels_drawn_once() {
        let svg = line_chart(&tiers_chart(&[1.0, 4.0, 16.0]));
        assert_eq!(svg.matches("<rect class=\"band\"").count(), 1);
        assert!(svg.contains(">shaded: steady</text>"));
        // Two identical series: each tier's label once, each line with its own dash.
        assert_eq!(svg.matches(">c=4</text>").count(), 1);
        assert_eq!(svg.matches("stroke-dasharray=\"9 5\"").count(), 2); // line + legend
    }
}
