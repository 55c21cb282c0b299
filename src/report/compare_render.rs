//! A comparison as a table, Markdown or JSON.

use serde_json::{json, Map, Value};

use super::compare::{higher_is_better, Comparison, MetricDelta};
use super::format::{display_for, percent, Display};
use super::grid::{Grid, MISSING, UNKNOWN};
use super::{markdown, table, Format, ReportError, TableStyle};
use crate::store::StoredRun;

fn verdict(d: &MetricDelta) -> String {
    match d.beyond_noise {
        Some(true) => match (higher_is_better(&d.metric), d.delta.unwrap_or(0.0) > 0.0) {
            (Some(h), up) if h == up => "better (beyond noise)".into(),
            (Some(_), _) => "worse (beyond noise)".into(),
            (None, _) => "beyond noise".into(),
        },
        Some(false) => "noise".into(),
        None => MISSING.into(),
    }
}

fn run_label(run: &StoredRun) -> String {
    super::pivot::axis_label(Some(&run.axes))
}

fn grid(c: &Comparison) -> Grid {
    let displays: Vec<Display> = c
        .metrics
        .iter()
        .map(|m| {
            let values: Vec<f64> = c
                .pairs
                .iter()
                .flat_map(|p| {
                    p.deltas
                        .iter()
                        .filter(|d| &d.metric == m)
                        .flat_map(|d| [d.base, d.new])
                })
                .flatten()
                .collect();
            display_for(m, &values)
        })
        .collect();
    let header = ["run", "metric", "base", "new", "Δ", "Δ%", "noise"]
        .map(String::from)
        .to_vec();
    let mut rows = Vec::new();
    for pair in &c.pairs {
        let label = pair
            .key
            .iter()
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(" · ");
        for (k, (d, disp)) in pair.deltas.iter().zip(&displays).enumerate() {
            let val = |v: Option<f64>| v.map_or_else(|| UNKNOWN.to_string(), |v| disp.value(v));
            rows.push(vec![
                if k == 0 { label.clone() } else { String::new() },
                disp.header(&d.metric),
                val(d.base),
                val(d.new),
                d.delta.map_or_else(
                    || UNKNOWN.to_string(),
                    |v| {
                        let s = disp.value(v);
                        if v > 0.0 {
                            format!("+{s}")
                        } else {
                            s
                        }
                    },
                ),
                d.delta_pct.map_or_else(|| UNKNOWN.to_string(), percent),
                verdict(d),
            ]);
        }
    }
    let mut notes = Vec::new();
    for (side, runs) in [("base", &c.only_base), ("new", &c.only_new)] {
        for run in runs.iter() {
            notes.push(format!(
                "only in {side}: run {} ({})",
                run.id,
                run_label(run)
            ));
        }
    }
    Grid {
        header,
        rows,
        label_cols: 2,
        notes,
    }
}

fn to_json(c: &Comparison) -> Value {
    let num = |v: Option<f64>| v.filter(|v| v.is_finite()).map_or(Value::Null, Value::from);
    let pairs: Vec<Value> = c
        .pairs
        .iter()
        .map(|p| {
            let metrics: Map<String, Value> = p
                .deltas
                .iter()
                .map(|d| {
                    (d.metric.clone(), json!({
                        "base": num(d.base), "new": num(d.new), "delta": num(d.delta),
                        "delta_pct": num(d.delta_pct),
                        "ci_low": num(d.interval.map(|i| i.low)), "ci_high": num(d.interval.map(|i| i.high)),
                        "beyond_noise": d.beyond_noise,
                    }))
                })
                .collect();
            let axes: Map<String, Value> = p.key.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect();
            json!({"axes": axes, "base_id": p.base.id, "new_id": p.new.id, "metrics": metrics})
        })
        .collect();
    let ids = |runs: &[StoredRun]| {
        runs.iter()
            .map(|r| json!({"id": r.id, "axes": r.axes}))
            .collect::<Vec<_>>()
    };
    json!({"pairs": pairs, "only_base": ids(&c.only_base), "only_new": ids(&c.only_new)})
}

/// The comparison in a format (`table`, `md`, `json`; CSV and HTML fall back to the table).
pub fn render(c: &Comparison, format: Format, style: TableStyle) -> Result<String, ReportError> {
    let verdicts: Vec<String> = c
        .pairs
        .iter()
        .flat_map(|p| p.deltas.iter().map(verdict))
        .collect();
    let count = |word: &str| verdicts.iter().filter(|v| v.starts_with(word)).count();
    let title = format!(
        "compare: {} (base) → {} (new): {} matched runs, {} unmatched; beyond noise: {} worse, {} better",
        c.base_name,
        c.new_name,
        c.pairs.len(),
        c.only_base.len() + c.only_new.len(),
        count("worse"),
        count("better"),
    );
    Ok(match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&to_json(c)).map_err(ReportError::Json)?;
            s.push('\n');
            s
        }
        Format::Md => format!("## {title}\n\n{}", markdown::render_grid(&grid(c))),
        _ => format!("{title}\n{}", table::render_grid(&grid(c), style)),
    })
}
