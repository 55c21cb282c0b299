//! The pivot as strings, shared by the table, Markdown and HTML exporters: a header,
//! label columns, formatted cells (`—` for a missing combination, `n/a` for an unknown
//! value), and notes.

use super::format::{display_for, Display};
use super::pivot::Pivot;
use crate::store::{RunStatus, StoredRun};

/// Shown for a combination no run covers.
pub const MISSING: &str = "—";
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

/// The pivot's cells formatted with one display unit per metric.
pub fn pivot_grid(runs: &[StoredRun], pivot: &Pivot) -> Grid {
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
    let mut header: Vec<String> = layout.rows.clone();
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
    let mut not_done = false;
    let rows = pivot
        .row_keys
        .iter()
        .zip(&pivot.cells)
        .map(|(key, cells)| {
            let mut line = key.clone();
            for cell in cells {
                for (m, d) in layout.metrics.iter().zip(&displays) {
                    line.push(match cell.map(|i| &runs[i]) {
                        None => MISSING.into(),
                        Some(run) => {
                            let done = run.status == RunStatus::Done;
                            match run.metrics.get(m).copied().flatten() {
                                Some(v) if done => d.value(v),
                                Some(v) => {
                                    not_done = true;
                                    format!("{}*", d.value(v))
                                }
                                None if done => UNKNOWN.into(),
                                None => run.status.as_str().into(),
                            }
                        }
                    });
                }
            }
            line
        })
        .collect();
    let mut notes = Vec::new();
    if not_done {
        notes.push("* from a run that did not finish (failed or interrupted)".to_string());
    }
    Grid {
        header,
        rows,
        label_cols: layout.rows.len(),
        notes,
    }
}
