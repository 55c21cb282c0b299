//! Reports from the results database: the pivot of runs (rows and columns are axis
//! values, cells the chosen metrics), its exporters (one per file: table, Markdown,
//! CSV, JSON, HTML with inline SVG plots), comparisons of two suites and sign-off gates.
//! Reads only the database (`store`) and the metric vocabulary (`metrics`); knows
//! nothing about plans' types, HTTP or the engine.

mod bars;
pub mod bootstrap;
mod bootstrap_capacity;
pub mod changed;
pub mod classes;
pub mod compare;
mod compare_match;
mod compare_render;
pub mod compare_trust;
pub mod csv;
pub mod environment;
pub mod evalscope;
pub mod format;
pub mod formats;
pub mod gates;
pub mod grid;
pub mod health;
pub mod history;
pub mod history_gate;
pub mod history_html;
pub mod history_render;
pub mod html;
mod html_header;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod min_effect;
pub mod otlp;
mod over_time;
pub mod paired;
mod pareto;
pub mod pivot;
mod plots;
pub mod prometheus;
pub mod ramp_steps;
pub mod repeats;
pub mod replicas;
mod sla_plots;
pub mod slices;
mod svg;
mod svg_series;
pub mod table;
mod timeline;
mod user_clock;
pub mod verdicts;

use std::path::PathBuf;

use serde::Deserialize;

use crate::metrics::condition::ConditionError;
use crate::store::{Store, StoreError, StoredRun, SuiteRow};

pub use formats::{Format, Writer};
pub use pivot::{Layout, Pivot};

/// Metrics shown when neither the plan nor the command line chooses.
pub(crate) const DEFAULT_METRICS: [&str; 6] = [
    "ttft_p50",
    "ttft_p99",
    "tpot_mean",
    "latency_p99",
    "output_tps",
    "success_ratio",
];

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("unknown metric `{name}`{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownMetric {
        name: String,
        suggestion: Option<String>,
    },
    #[error("unknown axis `{name}` (the runs have: {})", known.join(", "))]
    UnknownAxis { name: String, known: Vec<String> },
    #[error("invalid gate `{text}`: write METRIC=CONDITION, e.g. ttft_p99=\"<= 2s\"")]
    GateSyntax { text: String },
    #[error("invalid gate")]
    Condition(#[from] ConditionError),
    #[error("invalid history gate `{text}`: write METRIC OP STAT(last N) [±PCT%], e.g. \"ttft_p99 <= median(last 5) +5%\" (OP: <=, <, >=, >; STAT: median, mean, min, max)")]
    HistoryGate { text: String },
    #[error("invalid {what} stored in the suite")]
    Settings {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("unknown format `{0}` (table, md, csv, json, html)")]
    Format(String),
    #[error("--slices writes CSV: leave out --format or give --format csv")]
    SlicesFormat,
    #[error("--groups writes JSON or CSV: give --format json or --format csv")]
    GroupsFormat,
    #[error("--by-replica writes CSV: leave out --format or give --format csv")]
    ByReplicaFormat,
    #[error("--by-class writes CSV: leave out --format or give --format csv")]
    ByClassFormat,
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode the report as JSON")]
    Json(#[source] serde_json::Error),
}

/// How a human table is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStyle {
    /// Borders and wrapping for a terminal; plain columns when piped.
    pub tty: bool,
    /// Bold headers and coloured verdicts (only on a terminal without `NO_COLOR`).
    pub color: bool,
}

impl TableStyle {
    /// The style for standard output: a terminal gets borders, colour unless `NO_COLOR`.
    pub(crate) fn detect() -> TableStyle {
        use std::io::IsTerminal;
        let tty = std::io::stdout().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        TableStyle {
            tty,
            color: tty && !no_color,
        }
    }
}

/// The suite and its runs, read once for every exporter.
#[derive(Debug, Clone)]
pub struct ReportData {
    pub suite: SuiteRow,
    pub runs: Vec<StoredRun>,
    /// The clock of the runs' answer times (their metrics recomputed from the rows for
    /// the user clock: `user_clock`).
    pub clock: crate::record::Clock,
}

impl ReportData {
    /// The suite and its runs, their verdicts under the suite's `[trust]` policy.
    pub fn load(store: &Store) -> Result<ReportData, ReportError> {
        ReportData::load_accepting(store, &[])
    }

    /// `load`, with `accept` (`--accept`) added to the reasons each verdict accepts.
    pub(crate) fn load_accepting(
        store: &Store,
        accept: &[crate::trust::Code],
    ) -> Result<ReportData, ReportError> {
        let mut data = ReportData {
            suite: store.suite()?,
            runs: store.runs()?,
            clock: crate::record::Clock::Kernel,
        };
        let policy = data.suite.info.trust.policy().accepting(accept);
        verdicts::accept(&mut data, &policy.accept);
        Ok(data)
    }

    /// `load_accepting` with the layout the plan's `[report]` and `over` (the command
    /// line) make, the metrics on its clock.
    pub(crate) fn load_laid_out(
        store: &Store,
        accept: &[crate::trust::Code],
        over: &Layout,
    ) -> Result<(ReportData, Layout), ReportError> {
        let mut data = ReportData::load_accepting(store, accept)?;
        let layout = data.plan_layout()?.overridden_by(over);
        if layout.clock == Some(crate::record::Clock::User) {
            user_clock::apply(store, &mut data)?;
        }
        Ok((data, layout))
    }

    /// The plan's `[report]` section as stored in the suite.
    pub(crate) fn plan_layout(&self) -> Result<Layout, ReportError> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Metrics {
            Names(Vec<String>),
            Preset(crate::metrics::presets::Preset),
        }
        impl Default for Metrics {
            fn default() -> Metrics {
                Metrics::Names(Vec::new())
            }
        }
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Raw {
            rows: Vec<String>,
            columns: Vec<String>,
            metrics: Metrics,
        }
        let raw: Raw = if self.suite.info.report.is_null() {
            Raw::default()
        } else {
            serde_json::from_value(self.suite.info.report.clone()).map_err(|source| {
                ReportError::Settings {
                    what: "[report] settings",
                    source,
                }
            })?
        };
        // An axis the plan names but no run records (a one-value axis left out of the
        // runs' axes) only drops out of the pivot; names from the command line are checked.
        let known = pivot::axis_names(&self.runs);
        let (metrics, preset) = match raw.metrics {
            Metrics::Names(names) => (names, None),
            Metrics::Preset(p) => (Vec::new(), Some(p)),
        };
        Ok(Layout {
            rows: raw.rows.into_iter().filter(|a| known.contains(a)).collect(),
            columns: raw
                .columns
                .into_iter()
                .filter(|a| known.contains(a))
                .collect(),
            metrics,
            preset,
            clock: user_clock::of_plan(&self.suite.info.report),
        })
    }
}

/// The metric of the vocabulary nearest to `name`, for "did you mean".
pub(crate) fn unknown_metric(name: &str) -> ReportError {
    let all = crate::metrics::names::all_names();
    let suggestion =
        crate::suggest::nearest(name, all.iter().map(String::as_str)).map(str::to_string);
    ReportError::UnknownMetric {
        name: name.into(),
        suggestion,
    }
}

/// The suite's pivot in a text format (`Table`, `Md`, `Csv`, `Json`; `Html` gives the page).
/// `layout` overrides the plan's `[report]` where it is not empty. Markdown, JSON and HTML
/// carry the gate verdicts; the table leaves them to `gates::render`.
pub fn render(
    store: &Store,
    format: Format,
    (layout, accept): (&Layout, &[crate::trust::Code]),
    style: TableStyle,
    gates: &[gates::GateOutcome],
) -> Result<String, ReportError> {
    let (data, layout) = ReportData::load_laid_out(store, accept, layout)?;
    match format {
        Format::Table => table::render(&data, &layout, style),
        Format::Md => {
            let mut text = markdown::render(&data, &layout)?;
            if !gates.is_empty() {
                text.push('\n');
                text.push_str(&gates::render(gates, Format::Md, TableStyle::default()));
            }
            Ok(text)
        }
        Format::Csv => Ok(csv::render(&data)),
        Format::Json => json::render(&data, gates),
        Format::Html => html::render(store, (&layout, accept), gates),
        Format::Prometheus => Ok(prometheus::render(&data)),
    }
}

/// What `run`, `merge` and `rerun` write next to the database: `report.md` and
/// `report.html` (the plan's layout, run health, these gate verdicts). Returns their paths.
pub fn write_outputs(
    store: &Store,
    dir: &std::path::Path,
    gates: &[gates::GateOutcome],
) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    for (name, format) in [("report.md", Format::Md), ("report.html", Format::Html)] {
        let text = render(
            store,
            format,
            (&Layout::default(), &[]),
            TableStyle::default(),
            gates,
        )?;
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}
