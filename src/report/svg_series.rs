//! One series of a line chart and its legend entry. Series are told apart three ways at
//! once, so two identical lines stay visible and a page printed in grey still reads: a
//! colour (`PALETTE`), a dash pattern and a marker shape, each cycling at its own
//! period.

use std::fmt::Write;

use super::svg::{escape, Series, LEFT, PALETTE, TOP};

/// Dash patterns, by series: solid, dashed, dotted, dash-dot. A dashed line drawn over
/// an identical solid one leaves the solid one showing through its gaps.
const DASHES: [&str; 4] = ["", "9 5", "2 4", "12 4 2 4"];

/// Most characters of a legend name shown (the rest is an ellipsis and the tooltip).
const LEGEND_CHARS: usize = 46;

/// The `i`th series' colour, dash pattern and marker shape.
pub(crate) fn style(i: usize) -> (&'static str, &'static str, Shape) {
    let color = PALETTE[i % PALETTE.len()];
    // Offset by the colour's lap, so series 0 and 10 (one colour) differ in dash.
    let dash = DASHES[(i + i / PALETTE.len()) % DASHES.len()];
    let shape = SHAPES[(i + i / PALETTE.len()) % SHAPES.len()];
    (color, dash, shape)
}

/// A marker's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
}

const SHAPES: [Shape; 4] = [
    Shape::Circle,
    Shape::Square,
    Shape::Triangle,
    Shape::Diamond,
];

/// A marker of `shape` centred on `(x, y)`.
fn marker(shape: Shape, (x, y): (f64, f64), color: &str) -> String {
    let r = 4.0;
    match shape {
        Shape::Circle => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{color}"/>"#),
        Shape::Square => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{}" height="{}" fill="{color}"/>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        Shape::Triangle => format!(
            r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{color}"/>"#,
            x,
            y - r - 1.0,
            x - r - 0.5,
            y + r,
            x + r + 0.5,
            y + r
        ),
        Shape::Diamond => format!(
            r#"<polygon points="{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}" fill="{color}"/>"#,
            y - r - 1.0,
            x + r + 1.0,
            y + r + 1.0,
            x - r - 1.0
        ),
    }
}

fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    }
}

/// Point labels already drawn on a chart, where: a label that would land on another
/// (two series at one tier) is left out.
#[derive(Debug, Default)]
pub(crate) struct Placed(Vec<(f64, f64)>);

impl Placed {
    /// Takes the spot at `(x, y)` unless a label is drawn there already.
    fn take(&mut self, (x, y): (f64, f64)) -> bool {
        let taken = self
            .0
            .iter()
            .any(|&(a, b)| (a - x).abs() < 34.0 && (b - y).abs() < 13.0);
        if !taken {
            self.0.push((x, y));
        }
        !taken
    }
}

/// One series of a line chart: its line (and markers with their labels), and its
/// legend entry.
pub(crate) fn series_svg(
    s: &mut String,
    (i, series): (usize, &Series),
    (sx, sy): (&dyn Fn(f64) -> f64, &dyn Fn(f64) -> f64),
    (pw, placed): (f64, &mut Placed),
) {
    let (color, dash, shape) = style(i);
    let pts: Vec<(f64, f64)> = series
        .points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|&(x, y)| (sx(x), sy(y)))
        .collect();
    let line: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = write!(s, "<g><title>{}</title>", escape(&series.name));
    if !series.scatter {
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{} points="{}"/>"#,
            dash_attr(dash),
            line.join(" ")
        );
    }
    if series.markers {
        for (k, &(x, y)) in pts.iter().enumerate() {
            s.push_str(&marker(shape, (x, y), color));
            if let Some(label) = series.labels.get(k).filter(|_| placed.take((x, y))) {
                // Near the plot's right edge a label reads leftwards, off the legend.
                let near_edge = x > LEFT + pw - 40.0;
                let (anchor, dx) = if near_edge { ("end", -6) } else { ("start", 6) };
                let _ = write!(
                    s,
                    r#"<text x="{x:.1}" y="{y:.1}" dx="{dx}" dy="-7" text-anchor="{anchor}" fill="{color}">{}</text>"#,
                    escape(label)
                );
            }
        }
    }
    s.push_str("</g>");
    let (lx, ly) = legend_at(i, pw);
    let _ = write!(s, "<g><title>{}</title>", escape(&series.name));
    if !series.scatter {
        let _ = write!(
            s,
            r#"<line x1="{lx}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2.5"{}/>"#,
            lx + 24.0,
            dash_attr(dash)
        );
    }
    if series.markers {
        s.push_str(&marker(shape, (lx + 12.0, ly), color));
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}">{}</text></g>"#,
        lx + 30.0,
        ly + 4.0,
        escape(&shortened(&series.name))
    );
}

/// A band's legend entry (a shaded square), in legend slot `slot`.
pub(crate) fn band_legend(s: &mut String, slot: usize, name: &str, pw: f64) {
    let (lx, ly) = legend_at(slot, pw);
    let _ = write!(
        s,
        r##"<g><title>{}</title><rect x="{lx}" y="{:.1}" width="24" height="12" fill="#7f7f7f" fill-opacity="0.3"/><text x="{:.1}" y="{:.1}">shaded: {}</text></g>"##,
        escape(name),
        ly - 6.0,
        lx + 30.0,
        ly + 4.0,
        escape(&shortened(name))
    );
}

/// Where legend slot `i` sits: beside the plot, one line of 18 px each.
fn legend_at(i: usize, pw: f64) -> (f64, f64) {
    (LEFT + pw + 12.0, TOP + 8.0 + 18.0 * i as f64)
}

fn shortened(name: &str) -> String {
    let mut short: String = name.chars().take(LEGEND_CHARS).collect();
    if short.len() < name.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_and_colour_laps_differ_in_dash_and_shape() {
        for i in 0..40 {
            let (c, d, s) = style(i);
            let (c2, d2, s2) = style(i + 1);
            assert!(c != c2 || d != d2, "series {i} and {}", i + 1);
            assert!(s != s2, "series {i} and {} share a marker", i + 1);
            let (c10, d10, _) = style(i + PALETTE.len());
            assert_eq!(c, c10);
            assert_ne!(d, d10, "series {i} and {} share colour and dash", i + 10);
        }
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        let long = "x".repeat(80);
        assert_eq!(shortened(&long).chars().count(), LEGEND_CHARS + 1);
        assert_eq!(shortened("short"), "short");
    }
}
