//! Inline SVG line charts drawn by hand (no plotting crate, no script, no network):
//! axes with round ticks, one coloured line with markers per series, a legend.

use std::fmt::Write;

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Draw markers at the points (off for dense CDF lines).
    pub markers: bool,
    /// A short label beside each point (the tier a point stands for); empty for none.
    pub labels: Vec<String>,
}

/// A chart to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// The x axis's span when fixed (charts of one run's time share its span); `None`
    /// fits the points.
    pub x_range: Option<(f64, f64)>,
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

/// Escapes text for XML.
pub fn escape(text: &str) -> String {
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
    if (y1 - y0).abs() < f64::EPSILON {
        y1 = y0 + 1.0;
    }
    ((x0, x1), (y0, y1 * 1.05))
}

/// The chart as an `<svg>` element.
pub fn line_chart(chart: &Chart) -> String {
    let ((x0, x1), (y0, y1)) = bounds(chart);
    let (pw, ph) = (W - LEFT - legend_width(chart), H - TOP - BOTTOM);
    // The legend may need more room than the plot.
    let height = H.max(TOP + 18.0 * chart.series.len() as f64 + 20.0);
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
    let mut s = String::new();
    s.push_str(&open(&chart.title, height, LEFT));
    x_grid(&mut s, (x0, x1), &sx, ph);
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
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        H - 10.0, // the x label sits under the plot, whatever the legend's height
        escape(&chart.x_label)
    );
    let _ = write!(
        s,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        escape(&chart.y_label)
    );
    for (i, series) in chart.series.iter().enumerate() {
        series_svg(&mut s, (i, series), (&sx, &sy), pw);
    }
    s.push_str("</svg>");
    s
}

/// Room for the legend: its longest name (at most 56 characters are shown) at about
/// 6.5 px a character, between 160 px and `RIGHT`.
fn legend_width(chart: &Chart) -> f64 {
    let longest = chart
        .series
        .iter()
        .map(|s| s.name.chars().count().min(57))
        .max()
        .unwrap_or(0);
    (40.0 + 6.5 * longest as f64).clamp(160.0, RIGHT)
}

/// One series of a line chart: its line (and markers), and its legend entry.
fn series_svg(
    s: &mut String,
    (i, series): (usize, &Series),
    (sx, sy): (&dyn Fn(f64) -> f64, &dyn Fn(f64) -> f64),
    pw: f64,
) {
    let color = PALETTE[i % PALETTE.len()];
    let pts: Vec<String> = series
        .points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
        .collect();
    let _ = write!(
        s,
        r#"<g><title>{}</title><polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
        escape(&series.name),
        pts.join(" ")
    );
    if series.markers {
        for (k, p) in pts.iter().enumerate() {
            if let Some((x, y)) = p.split_once(',') {
                let _ = write!(s, r#"<circle cx="{x}" cy="{y}" r="3.5" fill="{color}"/>"#);
                if let Some(label) = series.labels.get(k) {
                    // Near the plot's right edge a label reads leftwards, off the legend.
                    let near_edge = x.parse::<f64>().is_ok_and(|x| x > LEFT + pw - 40.0);
                    let (anchor, dx) = if near_edge { ("end", -5) } else { ("start", 5) };
                    let _ = write!(
                        s,
                        r#"<text x="{x}" y="{y}" dx="{dx}" dy="-6" text-anchor="{anchor}" font-size="10" fill="{color}">{}</text>"#,
                        escape(label)
                    );
                }
            }
        }
    }
    s.push_str("</g>");
    let ly = TOP + 8.0 + 18.0 * i as f64;
    let lx = LEFT + pw + 14.0;
    let mut name: String = series.name.chars().take(56).collect();
    if name.len() < series.name.len() {
        name.push('…');
    }
    let _ = write!(
        s,
        r#"<g><title>{}</title><rect x="{lx}" y="{:.1}" width="14" height="4" fill="{color}"/><text x="{:.1}" y="{:.1}">{}</text></g>"#,
        escape(&series.name),
        ly - 4.0,
        lx + 20.0,
        ly + 2.0,
        escape(&name)
    );
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
                labels: vec!["c=1".into(), "c<2".into()],
            }],
            x_range: None,
        });
        assert!(svg.contains("a&lt;b") && svg.contains("s&amp;t") && svg.contains("<polyline"));
        assert!(svg.contains(">c=1</text>") && svg.contains(">c&lt;2</text>"));
    }
}
