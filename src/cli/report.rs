//! `perfplan report DB`: the pivot of a stored suite in a chosen format, with the
//! verdicts of the plan's and the command line's gates (exit 1 when one fails).

use std::path::{Path, PathBuf};

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use super::format_arg::FormatParser;
use crate::record::Clock;
use crate::report::{self, gates, Format, Layout, ReportError, TableStyle, Writer};
use crate::store::{Store, StoreError};

/// Tables from stored results.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A results database, or the output folder holding `results.db`.
    pub db: PathBuf,
    /// Axes whose values make the rows (comma-separated; default: the plan's `[report]`).
    #[arg(long, value_delimiter = ',')]
    pub rows: Vec<String>,
    /// Axes whose values make the columns (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub columns: Vec<String>,
    /// Metrics in every cell (comma-separated, e.g. ttft_p50,output_tps; CSV and JSON always
    /// hold every metric), or a preset: `evalscope` prints EvalScope perf's summary and
    /// percentile table per run.
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    #[arg(long, value_parser = FormatParser(Writer::Report), default_value = "table")]
    pub format: Format,
    /// Write here instead of standard output (`html` defaults to `report.html` next to the database; `-` is standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// An extra gate, METRIC=CONDITION (e.g. `ttft_p99=<=2s`, `output_tps=>=-5%`); repeatable.
    #[arg(long = "gate", value_name = "METRIC=CONDITION")]
    pub gates: Vec<String>,
    /// A baseline suite for relative gates (database or output folder).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Axes left out when matching runs with the baseline; repeatable.
    #[arg(long)]
    pub ignore: Vec<String>,
    /// A setting runs may differ in from their baseline run without failing relative
    /// gates (see `perfplan compare --allow-changed`); comma-separated or repeated.
    #[arg(long = "allow-changed", value_name = "SETTING", value_delimiter = ',')]
    pub allow_changed: Vec<String>,
    /// Also write the gate verdicts as JUnit XML to FILE (one test case per gate and run).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Accept a verdict reason by its code (it is shown, but no longer makes a run
    /// suspect or invalid, here and in the gates); comma-separated or repeated.
    #[arg(long = "accept", value_name = "REASON", value_delimiter = ',')]
    pub accept: Vec<String>,
    /// Print every run's time slices as CSV instead of the pivot (the book's "Time").
    #[arg(long, conflicts_with_all = ["rows", "columns", "metrics", "gates", "baseline", "junit"])]
    pub slices: bool,
    /// With `--slices`: their width (default: the plan's `[report] slice`, else 1s).
    #[arg(long, value_name = "DURATION", requires = "slices", value_parser = parse_slice)]
    pub slice: Option<std::time::Duration>,
    /// Print the groups of repeated runs (`repeat = N`) instead of the runs: each metric's
    /// mean and Student t 95% interval over a group's repeats, as JSON or CSV (the
    /// book's "Repeats").
    #[arg(long, conflicts_with_all = ["rows", "columns", "metrics", "gates", "baseline", "junit", "slices"])]
    pub groups: bool,
    /// Print every run's metrics per replica as CSV instead of the pivot (endpoints with
    /// several `urls` or simulated `replicas`; `--metrics` picks the columns; the
    /// book's "Replicas and sessions").
    #[arg(long, conflicts_with_all = ["rows", "columns", "gates", "baseline", "junit", "slices", "groups"])]
    pub by_replica: bool,
    /// Print every mix run's metrics per class as CSV instead of the pivot (datasets of
    /// `kind = "mix"`; `--metrics` picks the columns; the book's "Mixes").
    #[arg(long, conflicts_with_all = ["rows", "columns", "gates", "baseline", "junit", "slices", "groups", "by_replica"])]
    pub by_class: bool,
    #[arg(long = "export", value_name = "KIND=TARGET", help = super::export::help(
        "Also push every run's metrics where the team looks"
    ))]
    pub export: Vec<super::export::Export>,
    /// The clock of the answer times: `kernel` (when the bytes arrived, by the kernel's
    /// receive stamps where the run had them) or `user` (when the client read them: the
    /// metrics recomputed from the rows), for the pivot, the gates, `--slices`, `--groups`,
    /// `--by-replica` and `--by-class` alike. Default: the plan's `[report] clock`, else
    /// kernel.
    #[arg(long, value_name = "CLOCK", value_parser = parse_clock)]
    pub clock: Option<Clock>,
}

pub(super) fn parse_clock(text: &str) -> Result<Clock, String> {
    Clock::parse(text).ok_or_else(|| format!("a clock is `kernel` or `user`, not `{text}`"))
}

/// A `--slice` width, in `[report] slice`'s range.
fn parse_slice(text: &str) -> Result<std::time::Duration, String> {
    let d = crate::units::parse_duration(text).map_err(|e| e.to_string())?;
    let (lo, hi) = crate::plan::SLICE_RANGE;
    if d < lo || d > hi {
        return Err(format!("a time slice is 10ms to 1h wide, not {text}"));
    }
    Ok(d)
}

/// The suite's runs with their metrics on the clock `--clock` or the plan's `[report]
/// clock` chooses (what a breakdown shows is on the report's one clock).
fn on_clock(store: &Store, args: &ReportArgs) -> Result<report::ReportData, ReportError> {
    let over = Layout {
        clock: args.clock,
        ..Layout::default()
    };
    Ok(report::ReportData::load_laid_out(store, &[], &over)?.0)
}

/// `--slices`: every run's slices as CSV.
fn slices(args: &ReportArgs) -> Result<(), ReportError> {
    if !matches!(args.format, Format::Table | Format::Csv) {
        return Err(ReportError::SlicesFormat);
    }
    let store = Store::open(&args.db)?;
    let data = on_clock(&store, args)?;
    let text = report::slices::render_csv(&store, &data, args.slice)?;
    write_out(args.out.as_deref(), &text)
}

/// `report --groups`: the groups of repeated runs as JSON (the default) or CSV.
fn groups(args: &ReportArgs) -> Result<(), ReportError> {
    let store = Store::open(&args.db)?;
    let data = on_clock(&store, args)?;
    let text = match args.format {
        Format::Csv => report::repeats::csv(&data.runs),
        Format::Json | Format::Table => {
            let mut t = serde_json::to_string_pretty(&report::repeats::json(&data.runs))
                .map_err(ReportError::Json)?;
            t.push('\n');
            t
        }
        _ => return Err(ReportError::GroupsFormat),
    };
    write_out(args.out.as_deref(), &text)
}

/// A failed report: its error with the whole chain, and its exit code.
pub(crate) fn failure_of(e: &ReportError) -> Failure {
    Failure::of(code_of(e), e)
}

impl From<ReportError> for Failure {
    fn from(e: ReportError) -> Self {
        failure_of(&e)
    }
}

/// The warning that a command's gate verdicts could not be stored (the report goes on).
pub(crate) fn warn_not_stored(e: &StoreError) {
    eprintln!(
        "warning: gate verdicts not stored in the database: {}",
        crate::control::chain(e)
    );
}

/// The exit code for a failed report.
pub(crate) fn code_of(e: &ReportError) -> u8 {
    match e {
        ReportError::Store(StoreError::Json { .. }) => exit::INVALID,
        ReportError::Store(_) => exit::DATABASE,
        ReportError::Write { .. } => exit::OUTPUT,
        _ => exit::INVALID,
    }
}

pub(crate) fn write_out(out: Option<&Path>, text: &str) -> Result<(), ReportError> {
    match out {
        Some(path) if path != Path::new("-") => {
            std::fs::write(path, text).map_err(|source| ReportError::Write {
                path: path.to_path_buf(),
                source,
            })
        }
        _ => {
            print!("{text}");
            Ok(())
        }
    }
}

/// `--by-replica`: every run's metrics per replica as CSV.
fn by_replica(args: &ReportArgs) -> Result<(), ReportError> {
    if !matches!(args.format, Format::Table | Format::Csv) {
        return Err(ReportError::ByReplicaFormat);
    }
    let store = Store::open(&args.db)?;
    let clock = on_clock(&store, args)?.clock;
    let text = report::replicas::render_csv(&store, &args.metrics, clock)?;
    write_out(args.out.as_deref(), &text)
}

/// `--by-class`: every mix run's metrics per class as CSV.
fn by_class(args: &ReportArgs) -> Result<(), ReportError> {
    if !matches!(args.format, Format::Table | Format::Csv) {
        return Err(ReportError::ByClassFormat);
    }
    let store = Store::open(&args.db)?;
    let text = report::classes::render_csv(&on_clock(&store, args)?.runs, &args.metrics)?;
    write_out(args.out.as_deref(), &text)
}

fn report(args: &ReportArgs) -> Result<gates::GateVerdict, ReportError> {
    if args.slices {
        slices(args)?;
        return Ok(gates::verdict_of(&[]));
    }
    if args.groups {
        groups(args)?;
        return Ok(gates::verdict_of(&[]));
    }
    if args.by_replica {
        by_replica(args)?;
        return Ok(gates::verdict_of(&[]));
    }
    if args.by_class {
        by_class(args)?;
        return Ok(gates::verdict_of(&[]));
    }
    let mut store = Store::open(&args.db)?;
    let baseline = args.baseline.as_deref().map(Store::open).transpose()?;
    let baseline = baseline.as_ref().map(|b| gates::BaselineSuite {
        store: b,
        ignore: &args.ignore,
        allow_changed: &args.allow_changed,
    });
    let accept = crate::trust::Code::parse_list(&args.accept).map_err(ReportError::Format)?;
    let verdicts = gates::evaluate_suite(&store, (&args.gates, &accept), baseline, args.clock)?;
    if let Err(e) = store.write_gate_results("report", &gates::to_records(&verdicts)) {
        warn_not_stored(&e);
    }
    let mut layout = Layout::from_args(&args.rows, &args.columns, &args.metrics);
    layout.clock = args.clock;
    let format = args.format;
    let style = TableStyle::detect();
    let sign = super::signoff::SignOff {
        junit: args.junit.clone(),
    };
    sign.write_junit(&store, "report", &verdicts)?;
    super::signoff::step_summary(|| {
        report::render(
            &store,
            Format::Md,
            (&layout, &accept),
            TableStyle::default(),
            &verdicts,
        )
    });
    let text = report::render(&store, format, (&layout, &accept), style, &verdicts)?;
    let out = match (&args.out, format) {
        (None, Format::Html) => Some(store.path().with_file_name("report.html")),
        (out, _) => out.clone(),
    };
    write_out(out.as_deref(), &text)?;
    if let Some(path) = out.filter(|p| p != Path::new("-")) {
        eprintln!("wrote {}", path.display());
    }
    // Markdown, JSON and HTML carry the verdicts themselves; a table gets them after it.
    if !verdicts.is_empty() && matches!(format, Format::Table | Format::Csv) {
        let gate_text = gates::render(&verdicts, Format::Table, style);
        if format == Format::Table && args.out.is_none() {
            print!("\n{gate_text}");
        } else {
            eprint!("{gate_text}");
        }
    }
    Ok(gates::verdict_of(&verdicts))
}

/// Runs `perfplan report`; the exit code of its gates.
pub fn run(args: ReportArgs) -> Ended {
    let verdict = report(&args).map_err(|e| failure_of(&e))?;
    super::export::export_suite(&args.db, (&args.accept, args.clock), &args.export)?;
    Ok(exit::of_gates(verdict))
}

/// After `perfplan run` (and `merge`, `rerun`): the summary table and the gates' verdicts
/// (stored) on stdout and appended to `perfplan.log`, `report.md` and `report.html` next
/// to the database. The exit code of the gates.
pub(crate) fn after_run(
    dir: &Path,
    gates_cli: &[String],
    baseline: Option<&Path>,
    allow_changed: &[String],
) -> Ended {
    let sign = super::signoff::SignOff::default();
    after_run_signed(dir, gates_cli, baseline, allow_changed, &sign)
}

/// `after_run`, with the verdicts also written where CI looks (`--junit`, and the job
/// summary when `$GITHUB_STEP_SUMMARY` is set).
pub(crate) fn after_run_signed(
    dir: &Path,
    gates_cli: &[String],
    baseline: Option<&Path>,
    allow_changed: &[String],
    sign: &super::signoff::SignOff,
) -> Ended {
    after_run_inner(dir, gates_cli, baseline, allow_changed, sign)
        .map(exit::of_gates)
        .map_err(|e| failure_of(&e))
}

/// Appends `text` to the output folder's `perfplan.log`; a log that cannot be written
/// is a warning, never a failed report.
pub(super) fn append_log(dir: &Path, text: &str) {
    use std::io::Write;
    let path = dir.join("perfplan.log");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "warning: cannot append the report to {}: {e}",
            path.display()
        );
    }
}

fn after_run_inner(
    dir: &Path,
    gates_cli: &[String],
    baseline: Option<&Path>,
    allow_changed: &[String],
    sign: &super::signoff::SignOff,
) -> Result<gates::GateVerdict, ReportError> {
    let mut store = Store::open(dir)?;
    let baseline = baseline.map(Store::open).transpose()?;
    let baseline = baseline.as_ref().map(|b| gates::BaselineSuite {
        store: b,
        ignore: &[],
        allow_changed,
    });
    let verdicts = gates::check_suite(&mut store, "run", (gates_cli, &[]), baseline)?;
    sign.write_junit(&store, "run", &verdicts)?;
    let plain = (&Layout::default(), &[] as &[crate::trust::Code]);
    super::signoff::step_summary(|| {
        report::render(&store, Format::Md, plain, TableStyle::default(), &verdicts)
    });
    let final_tables = |style: TableStyle| -> Result<String, ReportError> {
        let mut text = report::render(&store, Format::Table, plain, style, &verdicts)?;
        if !verdicts.is_empty() {
            text.push('\n');
            text.push_str(&gates::render(&verdicts, Format::Table, style));
        }
        Ok(text)
    };
    print!("{}", final_tables(TableStyle::detect())?);
    let written = report::write_outputs(&store, dir, &verdicts)?;
    let wrote = format!(
        "wrote {}",
        written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    );
    eprintln!("{wrote}");
    // perfplan.log holds everything printed: the plain tables (no borders, no colour).
    append_log(
        dir,
        &format!("{}{wrote}\n", final_tables(TableStyle::default())?),
    );
    Ok(gates::verdict_of(&verdicts))
}
