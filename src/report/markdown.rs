//! Markdown (GitHub-flavoured) tables, fit for a release note or a CI job summary: the
//! runs' verdicts, the pivot (cells a verdict's reason touches marked), then the health of every run with failures, an error or warnings.

use super::grid::{pivot_grid, Grid};
use super::pivot::Pivot;
use super::{Layout, ReportData, ReportError};

/// The pivot of the suite's runs as Markdown, with a heading naming the suite.
pub fn render(data: &ReportData, layout: &Layout) -> Result<String, ReportError> {
    let layout = layout.resolve(&data.runs)?;
    let groups = super::repeats::grid(&data.runs, &layout.metrics);
    let pivot = Pivot::build(&data.runs, layout);
    let grid = pivot_grid(&data.runs, &pivot);
    let info = &data.suite.info;
    let mut out = format!("## perfplan: {}\n\n", info.plan_name);
    out.push_str(&format!(
        "{} runs · plan sha256 `{}` · perfplan {}\n\n",
        data.runs.len(),
        &data.suite.plan_sha256[..data.suite.plan_sha256.len().min(12)],
        info.perfplan_version
    ));
    out.push_str(&super::environment::markdown(data));
    if data.clock == crate::record::Clock::User {
        out.push_str(&format!(
            "*{}*\n\n",
            super::user_clock::line(data.clock).trim_end()
        ));
    }
    out.push_str(&super::verdicts::markdown(data));
    if pivot.layout.preset.is_some() {
        out.push_str(&super::evalscope::markdown(data));
        out.push_str(&super::health::markdown(data));
        return Ok(out);
    }
    out.push_str(&render_grid(&grid));
    if let Some(groups) = groups {
        out.push_str("\n### Repeats\n\n");
        out.push_str(&render_grid(&groups));
    }
    if let Some(steps) = super::ramp_steps::grid(&data.runs) {
        out.push_str("\n### Ramp steps\n\n");
        out.push_str(&render_grid(&steps));
    }
    if let Some(classes) = super::classes::grid(&data.runs) {
        out.push_str("\n### Mix classes\n\n");
        out.push_str(&render_grid(&classes));
    }
    out.push_str(&super::health::markdown(data));
    Ok(out)
}

pub(crate) fn escape(cell: &str) -> String {
    cell.replace('|', "\\|").replace('\n', "<br>")
}

/// Any grid as a Markdown table; numbers right-aligned.
pub(crate) fn render_grid(grid: &Grid) -> String {
    let mut out = String::new();
    let line = |cells: &[String]| {
        format!(
            "| {} |\n",
            cells
                .iter()
                .map(|c| escape(c))
                .collect::<Vec<_>>()
                .join(" | ")
        )
    };
    out.push_str(&line(&grid.header));
    let rule: Vec<String> = (0..grid.header.len())
        .map(|i| {
            if i < grid.label_cols {
                "---".into()
            } else {
                "---:".into()
            }
        })
        .collect();
    out.push_str(&format!("|{}|\n", rule.join("|")));
    for row in &grid.rows {
        out.push_str(&line(row));
    }
    for note in &grid.notes {
        out.push('\n');
        out.push_str(note);
        out.push('\n');
    }
    out
}
