//! A history as one self-contained HTML page (no script, no network): the table with
//! each step beyond noise coloured, then per run and metric a line over the releases,
//! each point with its interval as a whisker, a step judged worse marked by a red
//! triangle and its change, better by a green one, not judged by a grey `?`.

use std::fmt::Write;

use super::format::Display;
use super::history::{History, Judgement, Line, OrderBy};
use super::history_render::{display_of, grid, step_mark};
use super::svg::{escape, figure, ticks};

const W: f64 = 1000.0;
const H: f64 = 300.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 56.0;

const EXTRA: &str = "td.worse{background:#fbe3e4;color:#a3161c;font-weight:bold}\
td.better{background:#e3f6e9;color:#17803d;font-weight:bold}td.unjudged{color:#777}";

/// The page.
pub fn render(h: &History) -> String {
    let plan = escape(&h.plan);
    let mut s = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>perfplan history: {plan}</title><style>{}{EXTRA}</style></head><body><h1>perfplan history: {plan}</h1>",
        super::html::STYLE
    );
    let by = match &h.by {
        OrderBy::Label(k) => format!("label <b>{}</b>", escape(k)),
        OrderBy::Time => "creation time".into(),
    };
    let _ = write!(
        s,
        "<p class=\"header\">{} suites ordered by {by}; {} steps beyond noise (judged as <code>compare</code> judges)</p><ol class=\"facts\">",
        h.releases.len(),
        h.marked().len()
    );
    for r in &h.releases {
        let commit = r
            .commit
            .as_deref()
            .map(|c| format!(", commit {}", c.chars().take(12).collect::<String>()));
        let _ = write!(
            s,
            "<li><b>{}</b>: {} (created {}{})</li>",
            escape(&r.label),
            escape(&r.source),
            super::html::utc(r.created_unix_ms),
            escape(&commit.unwrap_or_default())
        );
    }
    s.push_str("</ol>");
    s.push_str(&table(h));
    s.push_str("<h2>Over releases</h2><p class=\"facts\">How to read: each point is the run's value in a release, the whisker its 95% interval (Student's t over its repeats, else a bootstrap of its requests); ▲ red: worse than the release before beyond noise, ▼ green: better, ? grey: not judged (a side is invalid for a reason touching the metric).</p><div class=\"charts\">");
    for line in &h.lines {
        s.push_str(&figure(&chart(h, line), ""));
    }
    s.push_str("</div></body></html>\n");
    s
}

fn table(h: &History) -> String {
    let g = grid(h);
    let mut s = String::from("<h2>Table</h2><table><thead><tr>");
    for head in &g.header {
        let _ = write!(s, "<th>{}</th>", escape(head));
    }
    s.push_str("</tr></thead><tbody>");
    for (row, line) in g.rows.iter().zip(&h.lines) {
        s.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = match i.checked_sub(g.label_cols) {
                None => "",
                Some(k) => match line.steps[k].as_ref().map(|st| &st.judgement) {
                    Some(Judgement::Worse) => " class=\"n worse\"",
                    Some(Judgement::Better) => " class=\"n better\"",
                    Some(Judgement::NotJudged(_)) => " class=\"n unjudged\"",
                    _ => " class=\"n\"",
                },
            };
            let _ = write!(s, "<td{class}>{}</td>", escape(cell));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    for note in &g.notes {
        let _ = write!(s, "<p class=\"facts\">{}</p>", escape(note));
    }
    s
}

/// The y range of a line: its values and intervals, padded by a tenth.
fn y_range(line: &Line, disp: &Display) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for p in line.points.iter().flatten() {
        let vals = [
            p.value,
            p.interval.map(|i| i.low),
            p.interval.map(|i| i.high),
        ];
        for v in vals.into_iter().flatten().map(|v| v * disp.scale) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.02).max(1e-9);
    (
        (lo - pad).max(if lo >= 0.0 { 0.0 } else { f64::MIN }),
        hi + pad,
    )
}

/// One line's chart.
fn chart(h: &History, line: &Line) -> String {
    let disp = display_of(line);
    let (y0, y1) = y_range(line, &disp);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let n = h.releases.len().max(1);
    let sx = |i: usize| LEFT + pw * (i as f64 + 0.5) / n as f64;
    let sy = |v: f64| TOP + ph - (v * disp.scale - y0) / (y1 - y0) * ph;
    let title = format!("{} · {}", line.run, disp.header(&line.metric));
    let mut s = super::svg::open(&title, H, LEFT);
    for t in ticks(y0, y1) {
        let y = TOP + ph - (t - y0) / (y1 - y0) * ph;
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            super::svg::tick_label(t)
        );
    }
    for (i, r) in h.releases.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            sx(i),
            TOP + ph + 18.0,
            escape(&r.label)
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        H - 8.0,
        match &h.by {
            OrderBy::Label(k) => escape(k),
            OrderBy::Time => "suite created".into(),
        }
    );
    let pts: Vec<String> = line
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some(format!("{:.1},{:.1}", sx(i), sy(p.as_ref()?.value?))))
        .collect();
    let _ = write!(
        s,
        r##"<polyline points="{}" fill="none" stroke="#1f77b4" stroke-width="2"/>"##,
        pts.join(" ")
    );
    for (i, p) in line.points.iter().enumerate() {
        let Some((p, v)) = p.as_ref().and_then(|p| Some((p, p.value?))) else {
            continue;
        };
        let (x, y) = (sx(i), sy(v));
        if let Some(iv) = p.interval {
            let (a, b) = (sy(iv.low), sy(iv.high));
            let _ = write!(
                s,
                r##"<path d="M{x:.1} {a:.1}V{b:.1}M{:.1} {a:.1}h10M{:.1} {b:.1}h10" stroke="#1f77b4" fill="none"/>"##,
                x - 5.0,
                x - 5.0
            );
        }
        s.push_str(&marker(line, i, (x, y), &disp, v));
    }
    s.push_str("</svg>");
    s
}

/// A point's marker: a plain dot, or the step's judgement with its change beside it.
fn marker(line: &Line, i: usize, (x, y): (f64, f64), disp: &Display, v: f64) -> String {
    let step = line.steps[i].as_ref();
    let tip = format!(
        "{}: {}{}",
        escape(&line.run),
        escape(&disp.value(v)),
        step.and_then(step_mark)
            .map(|m| format!(" {}", escape(&m)))
            .unwrap_or_default()
    );
    let (shape, text) = match step.map(|s| &s.judgement) {
        Some(Judgement::Worse) => (
            format!(
                r##"<path class="worse" d="M{x:.1} {:.1}l8 14h-16z" fill="#d62728"/>"##,
                y - 9.0
            ),
            step.and_then(step_mark),
        ),
        Some(Judgement::Better) => (
            format!(
                r##"<path class="better" d="M{x:.1} {:.1}l8 -14h-16z" fill="#2ca02c"/>"##,
                y + 9.0
            ),
            step.and_then(step_mark),
        ),
        Some(Judgement::NotJudged(_)) => (
            format!(
                r##"<circle class="unjudged" cx="{x:.1}" cy="{y:.1}" r="6" fill="white" stroke="#888" stroke-width="2"/>"##
            ),
            Some("?".into()),
        ),
        _ => (
            format!(r##"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="#1f77b4"/>"##),
            None,
        ),
    };
    let label = text.map_or(String::new(), |t| {
        let color = match step.map(|s| &s.judgement) {
            Some(Judgement::Worse) => "#a3161c",
            Some(Judgement::Better) => "#17803d",
            _ => "#777",
        };
        format!(
            r#"<text x="{:.1}" y="{:.1}" fill="{color}" font-weight="bold">{}</text>"#,
            x + 10.0,
            y - 10.0,
            escape(&t)
        )
    });
    format!("<g><title>{tip}</title>{shape}{label}</g>")
}
