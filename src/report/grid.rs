//! The pivot as strings, shared by the table, Markdown and HTML exporters: a header,
//! label columns, formatted cells (`—` for a missing combination, `n/a` for an unknown
//! value), and notes.

use super::format::{display_for, Display};
use super::pivot::Pivot;
use crate::store::{RunStatus, StoredRun};

/// Shown for a combination no run covers.
pub(crate) const MISSING: &str = "—";
/// Shown for a value the run could not measure.
pub const UNKNOWN: &str = "n/a";

/// A rectangular table of strings.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The first `label_cols` columns are axis labels; the rest are numbers.
    pub label_cols: usize,
    pub notes: Vec<String>,
}

/// One cell's text, and what its note needs.
enum Cell {
    Missing,
    Value(String),
    /// A value a reason of the run's verdict touches (`✗`, `?`).
    Marked(String),
    /// A value of a run that did not finish (`*`).
    NotDone(String),
}

fn cell_of(run: &StoredRun, m: &str, d: &Display) -> Cell {
    let done = run.status == RunStatus::Done;
    match run.metrics.get(m).copied().flatten() {
        Some(v) if done => match super::verdicts::mark(run, m) {
            Some(mark) => Cell::Marked(format!("{} {mark}", d.value(v))),
            None => Cell::Value(d.value(v)),
        },
        Some(v) => Cell::NotDone(format!("{}*", d.value(v))),
        None if done => Cell::Value(UNKNOWN.into()),
        None => Cell::Value(run.status.as_str().into()),
    }
}

/// The pivot's cells formatted with one display unit per metric. With column axes and
/// several metrics, metrics become rows (one column per variant reads far better than
/// variants × metrics side by side).
pub(crate) fn pivot_grid(runs: &[StoredRun], pivot: &Pivot) -> Grid {
    let layout = &pivot.layout;
    let displays: Vec<Display> = layout
        .metrics
        .iter()
        .map(|m| {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.metrics.get(m).copied().flatten())
                .collect();
            display_for(m, &values)
        })
        .collect();
    let metrics_as_rows = !layout.columns.is_empty() && layout.metrics.len() > 1;
    let (mut not_done, mut marked) = (false, false);
    let mut cell_text = |cell: Option<usize>, m: &str, d: &Display| {
        let text = cell.map_or(Cell::Missing, |i| cell_of(&runs[i], m, d));
        match text {
            Cell::Missing => MISSING.to_string(),
            Cell::Value(t) => t,
            Cell::Marked(t) => {
                marked = true;
                t
            }
            Cell::NotDone(t) => {
                not_done = true;
                t
            }
        }
    };
    let mut header: Vec<String> = layout.rows.clone();
    let mut rows = Vec::new();
    if metrics_as_rows {
        header.push("metric".into());
        header.extend(pivot.col_keys.iter().map(|k| k.join(" · ")));
        for (key, cells) in pivot.row_keys.iter().zip(&pivot.cells) {
            for (m, d) in layout.metrics.iter().zip(&displays) {
                let mut line = key.clone();
                line.push(d.header(m));
                line.extend(cells.iter().map(|c| cell_text(*c, m, d)));
                rows.push(line);
            }
        }
    } else {
        for key in &pivot.col_keys {
            for (m, d) in layout.metrics.iter().zip(&displays) {
                let name = d.header(m);
                if layout.columns.is_empty() {
                    header.push(name);
                } else {
                    header.push(format!("{}\n{name}", key.join(" · ")));
                }
            }
        }
        for (key, cells) in pivot.row_keys.iter().zip(&pivot.cells) {
            let mut line = key.clone();
            for cell in cells {
                for (m, d) in layout.metrics.iter().zip(&displays) {
                    line.push(cell_text(*cell, m, d));
                }
            }
            rows.push(line);
        }
    }
    let mut notes = Vec::new();
    if marked {
        notes.push(super::verdicts::mark_note());
    }
    if not_done {
        notes.push("* from a run that did not finish (failed or interrupted)".to_string());
    }
    Grid {
        header,
        rows,
        label_cols: layout.rows.len() + usize::from(metrics_as_rows),
        notes,
    }
}
