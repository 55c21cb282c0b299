//! Human tables for a terminal (comfy-table with borders, bold headers when colour is
//! allowed) or for a pipe (plain aligned columns, no colour); the pivot is followed by
//! the health of every run with failures, an error or warnings; the runs' verdicts
//! come first.

use comfy_table::{presets, Attribute, Cell, CellAlignment, Color, ContentArrangement, Table};

use super::grid::{pivot_grid, Grid};
use super::pivot::Pivot;
use super::{Layout, ReportData, ReportError, TableStyle};

/// The pivot of the suite's runs as a table.
pub fn render(
    data: &ReportData,
    layout: &Layout,
    style: TableStyle,
) -> Result<String, ReportError> {
    let layout = layout.resolve(&data.runs)?;
    if layout.preset.is_some() {
        let mut out = super::environment::text(data);
        out.push_str(&super::verdicts::text(data));
        out.push_str(&super::evalscope::table(data, style));
        return Ok(out);
    }
    let groups = super::repeats::grid(&data.runs, &layout.metrics);
    let pivot = Pivot::build(&data.runs, layout);
    let grid = pivot_grid(&data.runs, &pivot);
    let mut out = format!(
        "suite {} — {} runs\n",
        data.suite.info.plan_name,
        data.runs.len()
    );
    out.push_str(super::user_clock::line(data.clock));
    out.push_str(&super::environment::text(data));
    out.push_str(&super::verdicts::text(data));
    out.push_str(&render_grid(&grid, style));
    if let Some(groups) = groups {
        out.push('\n');
        out.push_str(&render_grid(&groups, style));
    }
    if let Some(steps) = super::ramp_steps::grid(&data.runs) {
        out.push_str("\nramp steps\n");
        out.push_str(&render_grid(&steps, style));
    }
    if let Some(classes) = super::classes::grid(&data.runs) {
        out.push_str("\nmix classes\n");
        out.push_str(&render_grid(&classes, style));
    }
    out.push_str(&super::health::text(data));
    Ok(out)
}

/// Any grid as a table, numbers right-aligned.
pub(crate) fn render_grid(grid: &Grid, style: TableStyle) -> String {
    let mut table = Table::new();
    if style.tty {
        table
            .load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
    } else {
        table
            .load_preset(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled);
    }
    table.set_header(grid.header.iter().map(|h| {
        let cell = Cell::new(h);
        if style.color {
            cell.add_attribute(Attribute::Bold)
        } else {
            cell
        }
    }));
    for row in &grid.rows {
        table.add_row(row.iter().enumerate().map(|(i, v)| {
            let mut cell = Cell::new(v);
            if style.color {
                cell = match v.as_str() {
                    "pass" => cell.fg(Color::Green),
                    "FAIL" => cell.fg(Color::Red).add_attribute(Attribute::Bold),
                    "beyond noise" => cell.fg(Color::Yellow),
                    "worse (beyond noise)" => cell.fg(Color::Red),
                    "better (beyond noise)" => cell.fg(Color::Green),
                    _ => cell,
                };
            }
            if i >= grid.label_cols {
                cell.set_alignment(CellAlignment::Right)
            } else {
                cell
            }
        }));
    }
    if !style.color {
        table.force_no_tty();
    }
    let mut out = table.to_string();
    if !style.tty {
        out = out
            .lines()
            .map(|l| l.trim_end())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
    }
    out.push('\n');
    for note in &grid.notes {
        out.push_str(note);
        out.push('\n');
    }
    out
}
