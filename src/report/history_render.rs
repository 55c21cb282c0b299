//! A history as a table (terminal and Markdown: one row per run and metric, one column
//! per release, a step beyond noise marked in the cell it leads into), as CSV (one row
//! per run, metric and release) and as JSON.

use serde_json::{json, Value};

use super::format::{display_for, percent, Display};
use super::grid::{Grid, MISSING, UNKNOWN};
use super::history::{History, Judgement, Line, OrderBy, Point, Step};
use super::{markdown, table, Format, ReportError, TableStyle};

/// How a marked step reads in a cell: `▲ worse +210.3%`.
pub(crate) fn step_mark(step: &Step) -> Option<String> {
    let pct = step.delta_pct.map(percent).unwrap_or_default();
    match &step.judgement {
        Judgement::Worse => Some(format!("▲ worse {pct}")),
        Judgement::Better => Some(format!("▼ better {pct}")),
        Judgement::Changed => Some(format!("◆ changed {pct}")),
        Judgement::NotJudged(_) => Some("? not judged".into()),
        Judgement::NoChange => None,
    }
}

/// The display unit of a line: one for all its points.
pub(crate) fn display_of(line: &Line) -> Display {
    let values: Vec<f64> = line
        .points
        .iter()
        .flatten()
        .filter_map(|p| p.value)
        .collect();
    display_for(&line.metric, &values)
}

fn cell(point: Option<&Point>, step: Option<&Step>, disp: &Display) -> String {
    let Some(p) = point else {
        return MISSING.into();
    };
    let mut text = p.value.map_or(UNKNOWN.to_string(), |v| disp.value(v));
    if let Some(mark) = step.and_then(step_mark) {
        text = format!("{text} {mark}");
    }
    text
}

/// The history as a grid.
pub fn grid(h: &History) -> Grid {
    let mut header = vec!["run".to_string(), "metric".to_string()];
    header.extend(h.releases.iter().map(|r| r.label.clone()));
    let rows = h
        .lines
        .iter()
        .map(|line| {
            let disp = display_of(line);
            let mut row = vec![line.run.clone(), disp.header(&line.metric)];
            for (p, s) in line.points.iter().zip(&line.steps) {
                row.push(cell(p.as_ref(), s.as_ref(), &disp));
            }
            row
        })
        .collect();
    let mut notes = vec![
        "▲ worse / ▼ better: the step from the release before is beyond noise and at least \
         the metric's minimum effect, judged as `compare` judges; ? not judged: a side is \
         invalid for a reason touching the metric"
            .to_string(),
    ];
    for (source, why) in &h.skipped {
        notes.push(format!("left out {source}: {why}"));
    }
    Grid {
        header,
        rows,
        label_cols: 2,
        notes,
    }
}

fn headline(h: &History) -> String {
    let by = match &h.by {
        OrderBy::Label(k) => format!("label `{k}`"),
        OrderBy::Time => "creation time".into(),
    };
    let marked = h.marked().len();
    format!(
        "history of plan `{}`: {} suites ordered by {by}, {} lines; {marked} steps beyond noise\n",
        h.plan,
        h.releases.len(),
        h.lines.len()
    )
}

/// The history in `format` (table, Markdown, CSV or JSON).
pub fn render(h: &History, format: Format, style: TableStyle) -> Result<String, ReportError> {
    let g = grid(h);
    Ok(match format {
        Format::Md => format!(
            "## {}\n{}",
            headline(h).trim_end(),
            markdown::render_grid(&g)
        ),
        Format::Csv => csv(h),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json(h)).map_err(ReportError::Json)?;
            s.push('\n');
            s
        }
        Format::Table => format!("{}{}", headline(h), table::render_grid(&g, style)),
        other => return Err(ReportError::Format(format!("{other:?}").to_lowercase())),
    })
}

fn num(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// One row per run, metric and release, values in the metric's stored unit.
pub fn csv(h: &History) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from(
        "run,metric,release,source,value,low,high,repeats,verdict,step,step_pct,why\n",
    );
    for line in &h.lines {
        for (i, r) in h.releases.iter().enumerate() {
            let Some(p) = &line.points[i] else { continue };
            let step = line.steps[i].as_ref();
            let why = match step.map(|s| &s.judgement) {
                Some(Judgement::NotJudged(w)) => w.clone(),
                _ => String::new(),
            };
            let fields = [
                quote(&line.run),
                quote(&line.metric),
                quote(&r.label),
                quote(&r.source),
                num(p.value),
                num(p.interval.map(|iv| iv.low)),
                num(p.interval.map(|iv| iv.high)),
                p.repeats.to_string(),
                p.verdict.clone(),
                step.map(|s| s.judgement.word().to_string())
                    .unwrap_or_default(),
                num(step.and_then(|s| s.delta_pct)),
                quote(&why),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

/// The history as JSON: releases, left-out suites, and per line its points and steps.
pub fn json(h: &History) -> Value {
    let lines: Vec<Value> = h
        .lines
        .iter()
        .map(|line| {
            let points: Vec<Value> = line
                .points
                .iter()
                .zip(&line.steps)
                .map(|(p, s)| {
                    let step = s.as_ref().map(|s| {
                        let mut v =
                            json!({"judgement": s.judgement.word(), "delta_pct": s.delta_pct});
                        if let Judgement::NotJudged(why) = &s.judgement {
                            v["why"] = json!(why);
                        }
                        v
                    });
                    p.as_ref().map_or(Value::Null, |p| {
                        json!({
                            "value": p.value,
                            "interval": p.interval.map(|iv| json!([iv.low, iv.high])),
                            "repeats": p.repeats,
                            "verdict": p.verdict,
                            "step": step,
                        })
                    })
                })
                .collect();
            json!({"run": line.run, "metric": line.metric, "points": points})
        })
        .collect();
    json!({
        "plan": h.plan,
        "by": match &h.by { OrderBy::Label(k) => k.clone(), OrderBy::Time => "time".into() },
        "releases": h.releases.iter().map(|r| json!({
            "label": r.label, "source": r.source,
            "created_unix_ms": r.created_unix_ms, "commit": r.commit,
        })).collect::<Vec<_>>(),
        "skipped": h.skipped.iter().map(|(s, w)| json!({"source": s, "why": w})).collect::<Vec<_>>(),
        "metrics": h.metrics,
        "clock": h.clock.as_str(),
        "lines": lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::bootstrap::Interval;
    use crate::report::history::Release;

    fn history() -> History {
        let release = |label: &str| Release {
            source: format!("out/{label}"),
            label: label.into(),
            created_unix_ms: 0,
            commit: None,
        };
        let point = |v: f64| {
            Some(Point {
                value: Some(v),
                interval: Some(Interval {
                    low: v - 1.0,
                    high: v + 1.0,
                }),
                repeats: 1,
                verdict: "valid".into(),
            })
        };
        let step = |pct: f64, judgement: Judgement| {
            Some(Step {
                delta_pct: Some(pct),
                judgement,
            })
        };
        History {
            plan: "p".into(),
            by: OrderBy::Label("release".into()),
            releases: vec![release("1.0"), release("1.1"), release("1.2")],
            skipped: vec![("out/x".into(), "plan `q`, not `p`".into())],
            metrics: vec!["ttft_p99".into()],
            clock: crate::record::Clock::Kernel,
            lines: vec![Line {
                run: "c=4".into(),
                metric: "ttft_p99".into(),
                points: vec![point(40.0), point(120.0), None],
                steps: vec![
                    None,
                    step(200.0, Judgement::Worse),
                    step(
                        0.0,
                        Judgement::NotJudged("new invalid: client_bound".into()),
                    ),
                ],
            }],
        }
    }

    #[test]
    fn the_table_marks_the_step_in_the_cell_it_leads_into() {
        let g = grid(&history());
        assert_eq!(g.header, ["run", "metric", "1.0", "1.1", "1.2"]);
        assert_eq!(
            g.rows,
            [["c=4", "ttft_p99 (ms)", "40", "120 ▲ worse +200.0%", "—"]]
        );
        assert_eq!(g.notes[1], "left out out/x: plan `q`, not `p`");
    }

    #[test]
    fn csv_and_json_have_their_shape() {
        let h = history();
        let text = csv(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "run,metric,release,source,value,low,high,repeats,verdict,step,step_pct,why",
                "c=4,ttft_p99,1.0,out/1.0,40,39,41,1,valid,,,",
                "c=4,ttft_p99,1.1,out/1.1,120,119,121,1,valid,worse,200,",
            ]
        );
        let j = json(&h);
        assert_eq!(j["lines"][0]["points"][1]["step"]["judgement"], "worse");
        assert_eq!(j["lines"][0]["points"][2], Value::Null);
        assert_eq!(j["skipped"][0]["source"], "out/x");
    }
}
