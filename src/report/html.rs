//! The self-contained HTML report: one file, no script, no network. The suite's facts,
//! the pivot table, gate verdicts, the runs, and inline SVG plots (sweeps, latency vs
//! throughput per tier, TTFT/TPOT/latency CDFs from the request rows, compared axes side
//! by side, each run's requests on its time axis).

use std::fmt::Write;
use std::path::Path;

use super::bars::{bar_chart, compared_charts};
use super::format::number;
use super::gates::GateOutcome;
use super::grid::{pivot_grid, Grid, MISSING};
use super::pivot::{axis_label, Labels, Pivot};
use super::plots::{cdf_charts, sweep_charts, Digest};
use super::svg::{escape, figure, line_figure};
use super::{Layout, ReportData, ReportError};
use crate::store::Store;

pub(crate) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}\
table{border-collapse:collapse;margin:12px 0;font-size:13px}th,td{border:1px solid #ccc;padding:4px 8px}\
th{background:#f3f3f3;vertical-align:bottom}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.pass{color:#17803d;font-weight:bold}.fail{color:#c0262d;font-weight:bold}\
.facts{color:#555;font-size:13px}figure{margin:8px 0}pre{background:#f7f7f7;padding:8px;overflow:auto}\
.charts{display:grid;grid-template-columns:minmax(0,1000px);gap:8px 16px}\
figcaption{font-size:13px;color:#555;margin:2px 0 10px 4px;max-width:1000px}\
p.error{border-left:6px solid #c0262d;background:#fdf0f0;padding:6px 12px;font-size:14px}\
.header{font-size:15px;margin:4px 0 10px}.header b{font-weight:600}\
details.run{margin:8px 0}details.run>summary{cursor:pointer;font-weight:bold}\
.verdicts{border-left:6px solid #c0262d;background:#fdf0f0;padding:8px 14px;margin:12px 0;font-size:14px}\
.verdicts.suspect{border-color:#b7791f;background:#fdf8ec}.verdicts.valid{border-color:#17803d;background:#f0f9f3}\
td.invalid{background:#fbe3e4;color:#a3161c}td.suspect{background:#fdf3dc}\
.verdicts li{margin:4px 0}.verdicts .invalid{color:#c0262d;font-weight:bold}.verdicts .suspect{color:#8a5a00;font-weight:bold}";

/// The runs' verdicts as a banner above everything else: red when a run is invalid,
/// amber when one is suspect, green when all are valid; each run that is not valid with
/// its reasons. Nothing for a suite stored before verdicts.
fn verdicts_html(data: &ReportData) -> String {
    use crate::trust::Status;
    let worst = data.runs.iter().map(|r| r.verdict.status).max();
    let class = match worst {
        None | Some(Status::NotJudged) => return String::new(),
        Some(Status::Invalid) => "invalid",
        Some(Status::Suspect) => "suspect",
        Some(Status::Valid) => "valid",
    };
    let mut s = format!(
        "<section class=\"verdicts {class}\"><strong>{}</strong><ul>",
        escape(&super::verdicts::count_line(&data.runs))
    );
    for e in super::verdicts::entries(data) {
        let _ = write!(
            s,
            "<li><span class=\"{}\">{}</span> {}<ul>",
            e.verdict.status.as_str(),
            escape(e.verdict.status.as_str()),
            escape(&e.run)
        );
        for r in &e.verdict.reasons {
            let _ = write!(s, "<li>{}</li>", escape(&super::verdicts::reason_line(r)));
        }
        s.push_str("</ul></li>");
    }
    s.push_str("</ul></section>");
    s
}

/// `2026-11-29 08:56:05 UTC`.
pub(crate) fn utc(unix_ms: i64) -> String {
    let t = crate::units::UtcTime::of_unix_ms(unix_ms);
    format!("{} {} UTC", t.date(), t.time())
}

fn grid_html(grid: &Grid) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in &grid.header {
        let _ = write!(s, "<th>{}</th>", escape(h).replace('\n', "<br>"));
    }
    s.push_str("</tr></thead><tbody>");
    for row in &grid.rows {
        s.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let marked = |m: &str| cell.ends_with(&format!(" {m}"));
            let class = if i < grid.label_cols {
                ""
            } else if marked(super::verdicts::INVALID_MARK) {
                " class=\"n invalid\""
            } else if marked(super::verdicts::SUSPECT_MARK) {
                " class=\"n suspect\""
            } else {
                " class=\"n\""
            };
            let _ = write!(s, "<td{class}>{}</td>", escape(cell));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    for note in &grid.notes {
        let _ = write!(s, "<p class=\"facts\">{}</p>", escape(note));
    }
    s
}

fn facts(data: &ReportData) -> String {
    let info = &data.suite.info;
    let git = info.git.as_ref().map_or("not in git".to_string(), |g| {
        format!("{}{}", g.revision, if g.dirty { " (dirty)" } else { "" })
    });
    format!(
        "<p class=\"facts\">{} runs · created {} · plan sha256 <code>{}</code> · plan revision {} · perfplan {}<br>host {} · {} · {} cores{}</p>",
        data.runs.len(),
        utc(data.suite.created_unix_ms),
        escape(&data.suite.plan_sha256),
        escape(&git),
        escape(&info.perfplan_version),
        escape(&info.host.hostname),
        escape(&info.host.os),
        info.host.cores,
        if info.set_overrides.is_empty() {
            String::new()
        } else {
            format!(" · --set {}", escape(&info.set_overrides.join(" ")))
        }
    )
}

fn gate_rows(gates: &[&GateOutcome]) -> String {
    let mut s = String::from("<table><thead><tr><th>gate</th><th>run</th><th>verdict</th><th>detail</th></tr></thead><tbody>");
    for g in gates {
        let (class, word) = if g.passed {
            ("pass", "pass")
        } else {
            ("fail", "FAIL")
        };
        let _ = write!(
            s,
            "<tr><td>{} {}</td><td>{}</td><td class=\"{class}\">{word}</td><td>{}</td></tr>",
            escape(&g.condition.metric),
            escape(&g.condition.text),
            escape(&g.run_label),
            escape(&g.message)
        );
    }
    s.push_str("</tbody></table>");
    s
}

/// Failures in full; passes folded away.
fn gates_html(gates: &[GateOutcome]) -> String {
    let (passed, failed): (Vec<&GateOutcome>, Vec<&GateOutcome>) =
        gates.iter().partition(|g| g.passed);
    let mut s = if failed.is_empty() {
        format!(
            "<h2>Gates: <span class=\"pass\">PASS</span></h2><p>{} checks passed.</p>",
            gates.len()
        )
    } else {
        format!(
            "<h2>Gates: <span class=\"fail\">FAIL</span></h2><p>{} of {} checks failed.</p>{}",
            failed.len(),
            gates.len(),
            gate_rows(&failed)
        )
    };
    if !passed.is_empty() {
        let _ = write!(
            s,
            "<details><summary>{} passed checks</summary>{}</details>",
            passed.len(),
            gate_rows(&passed)
        );
    }
    s
}

/// `target / client / server` mean input tokens, `—` where unknown.
fn input_lengths(digest: &Digest) -> String {
    let (t, c, s) = digest.input_means;
    [t, c, s]
        .iter()
        .map(|v| v.map_or_else(|| MISSING.to_string(), number))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// `41.2 / 43.0 · 40.0 / 50.0`: the client's TTFT p50 / p99 next to the server's own (from
/// its histogram, the book, metrics/telemetry.md); `—` where unknown.
fn client_and_server_ttft(run: &crate::store::StoredRun) -> String {
    let m = |name: &str| {
        run.metrics
            .get(name)
            .copied()
            .flatten()
            .map_or_else(|| MISSING.to_string(), number)
    };
    format!(
        "{} / {} · {} / {}",
        m("ttft_p50"),
        m("ttft_p99"),
        m("server_ttft_p50"),
        m("server_ttft_p99")
    )
}

fn runs_html(data: &ReportData, digests: &[Digest]) -> String {
    let mut s = String::from("<h2>Runs</h2><table><thead><tr><th>#</th><th>id</th><th>status</th><th>axes</th><th>input tokens, mean<br>target / client / server</th><th>TTFT p50 / p99 (ms)<br>client · server</th><th>failures</th><th>errors and warnings</th></tr></thead><tbody>");
    for (r, digest) in data.runs.iter().zip(digests) {
        let _ = write!(
            s,
            "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            r.ordinal,
            escape(&r.id),
            r.status,
            escape(&axis_label(Some(&r.axes))),
            input_lengths(digest),
            client_and_server_ttft(r),
            escape(&super::health::RunHealth::of(r).failures_text().unwrap_or_else(|| "none".into())),
            escape(&r.error.iter().map(|e| format!("error: {e}")).chain(r.warnings.iter().map(ToString::to_string)).collect::<Vec<_>>().join("; "))
        );
    }
    s.push_str("</tbody></table>");
    s
}

const BARS_HOW: &str = "one group per combination of the other axes, one bar per value of \
the compared axis, its figure at the bar's end; compare bars within a group, not across";

/// The plots: sweeps and operating points, CDFs, compared axes side by side, and each
/// run over time.
fn plots_html(data: &ReportData, digests: &[Digest]) -> String {
    let charts: Vec<_> = sweep_charts(&data.runs)
        .into_iter()
        .chain(super::pareto::chart(&data.runs))
        .chain(cdf_charts(&data.runs, digests))
        .collect();
    let labels = Labels::new(&data.runs);
    let mut s = String::new();
    if !charts.is_empty() {
        let _ = write!(
            s,
            "<h2>Plots</h2><p class=\"facts\">A line's name gives its values of {}.</p><div class=\"charts\">",
            escape(&lines_of(&labels))
        );
        for chart in &charts {
            s.push_str(&line_figure(chart));
        }
        s.push_str("</div>");
    }
    let bars = compared_charts(&data.runs);
    if !bars.is_empty() {
        s.push_str("<h2>Side by side</h2><p class=\"facts\">Each compared axis's values next to each other, one group per combination of the other axes.</p><div class=\"charts\">");
        for chart in &bars {
            s.push_str(&figure(&bar_chart(chart), BARS_HOW));
        }
        s.push_str("</div>");
    }
    s
}

/// The varying axes a legend entry's values stand for: `endpoint · cache_state · load`.
fn lines_of(labels: &Labels) -> String {
    if labels.varying().is_empty() {
        "no axis (every run is alike)".into()
    } else {
        labels.varying().join(" · ")
    }
}

/// The whole page.
pub fn render(
    store: &Store,
    (layout, accept): (&Layout, &[crate::trust::Code]),
    gates: &[GateOutcome],
) -> Result<String, ReportError> {
    let (data, layout) = ReportData::load_laid_out(store, accept, layout)?;
    let layout = layout.resolve(&data.runs)?;
    let groups = super::repeats::grid(&data.runs, &layout.metrics);
    let grid = pivot_grid(&data.runs, &Pivot::build(&data.runs, layout));
    // One run's per-request values at a time, each drawn down to its digest.
    let digests = data
        .runs
        .iter()
        .map(|r| Digest::of_run(store, r, data.clock))
        .collect::<Result<Vec<_>, _>>()?;
    let name = escape(&data.suite.info.plan_name);
    let mut s = format!("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>perfplan: {name}</title><style>{STYLE}</style></head><body>");
    let _ = write!(
        s,
        "<h1>perfplan: {name}</h1>{}{}",
        super::html_header::header(&data),
        facts(&data)
    );
    s.push_str(&verdicts_html(&data));
    s.push_str("<h2>Results</h2>");
    if data.clock == crate::record::Clock::User {
        let _ = write!(
            s,
            "<p class=\"facts\">{} So are the plots.</p>",
            escape(super::user_clock::line(data.clock).trim_end())
        );
    }
    s.push_str(&grid_html(&grid));
    if let Some(groups) = groups {
        let _ = write!(s, "<h2>Repeats</h2>{}", grid_html(&groups));
    }
    if let Some(steps) = super::ramp_steps::grid(&data.runs) {
        let _ = write!(s, "<h2>Ramp steps</h2>{}", grid_html(&steps));
        for chart in super::ramp_steps::charts(&data.runs) {
            s.push_str(&line_figure(&chart));
        }
    }
    if let Some(classes) = super::classes::grid(&data.runs) {
        let _ = write!(s, "<h2>Mix classes</h2>{}", grid_html(&classes));
        s.push_str("<div class=\"charts\">");
        for chart in super::classes::charts(&data.runs, &digests) {
            s.push_str(&line_figure(&chart));
        }
        s.push_str("</div>");
    }
    if !gates.is_empty() {
        s.push_str(&gates_html(gates));
    }
    // Each run's errors and warnings before any chart: what invalidates a figure is
    // read before the figure.
    s.push_str(&runs_html(&data, &digests));
    s.push_str(&plots_html(&data, &digests));
    s.push_str(&super::over_time::section(store, &data, &digests)?);
    s.push_str(&super::sla_plots::section(store, &data.runs)?);
    let _ = writeln!(
        s,
        "<details><summary>plan</summary><pre>{}</pre></details></body></html>",
        escape(&data.suite.info.plan_text)
    );
    Ok(s)
}

/// Writes the page to `path`.
pub fn write(
    store: &Store,
    layout: &Layout,
    gates: &[GateOutcome],
    path: &Path,
) -> Result<(), ReportError> {
    let page = render(store, (layout, &[]), gates)?;
    std::fs::write(path, page).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_028_965_000), "2026-11-30 08:56:05 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }
}
