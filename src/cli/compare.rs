//! `perfplan compare BASE NEW`: the same runs of two suites side by side (matched by
//! axis values), deltas with a seeded bootstrap noise verdict, and gate verdicts
//! (relative gates against BASE; exit 1 when one fails).

use std::path::PathBuf;

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use super::format_arg::FormatParser;
use super::report::{failure_of, warn_not_stored, write_out};
use crate::report::bootstrap::BootstrapOptions;
use crate::report::compare::{self, CompareOptions};
use crate::report::{gates, Format, ReportError, TableStyle, Writer};
use crate::store::Store;

/// Two suites side by side.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline suite (database or output folder).
    pub base: PathBuf,
    /// The suite compared with it.
    pub new: PathBuf,
    /// Axes left out of the matching (e.g. `endpoint` when comparing two servers); repeatable.
    #[arg(long)]
    pub ignore: Vec<String>,
    /// Metrics compared (comma-separated; default: the new plan's `[report]` metrics).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    #[arg(long, value_parser = FormatParser(Writer::Compare), default_value = "table")]
    pub format: Format,
    /// An extra gate, METRIC=CONDITION; relative ones (`>= -5%`) compare with BASE; repeatable.
    #[arg(long = "gate", value_name = "METRIC=CONDITION")]
    pub gates: Vec<String>,
    /// A setting matched runs may differ in without failing relative gates (a path as
    /// `compare` lists it, `request.output_tokens`, a table above it, `dataset`, or its
    /// last part, `output_tokens`); comma-separated or repeated.
    #[arg(long = "allow-changed", value_name = "SETTING", value_delimiter = ',')]
    pub allow_changed: Vec<String>,
    /// The smallest change of a metric called a change, METRIC=PCT (e.g. `ttft_p99=10%`);
    /// repeatable. Defaults: 5% for means, medians and scalars, 10% for other
    /// percentiles and stdev, 20% for p99, p999 and max.
    #[arg(long = "min-effect", value_name = "METRIC=PCT")]
    pub min_effect: Vec<crate::report::min_effect::MinEffect>,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = BootstrapOptions::default().seed)]
    pub seed: u64,
    /// Bootstrap resamples per metric.
    #[arg(long, default_value_t = BootstrapOptions::default().resamples)]
    pub resamples: u32,
    /// Write here instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the gate verdicts as JUnit XML to FILE (one test case per gate and run).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also compare matched runs request by request: the same item (prompt) on both
    /// sides, for runs that differ only by endpoint (`--ignore endpoint`); TTFT, TPOT and
    /// latency differences with 95% intervals of their mean and median (the book's "Repeats").
    #[arg(long)]
    pub paired: bool,
    /// Accept a verdict reason by its code on both sides (it is shown, but a change it
    /// touches is judged again); comma-separated or repeated.
    #[arg(long = "accept", value_name = "REASON", value_delimiter = ',')]
    pub accept: Vec<String>,
    /// The clock of both suites' answer times, for the deltas, their noise and the gates:
    /// `kernel` (when the bytes arrived) or `user` (when the client read them: a suite
    /// stored before kernel receive stamps is on it). Default: the new plan's `[report]
    /// clock`, else kernel.
    #[arg(long, value_name = "CLOCK", value_parser = super::report::parse_clock)]
    pub clock: Option<crate::record::Clock>,
}

/// How a comparison ended: its gates' verdict, and how many runs it matched.
struct Compared {
    verdict: gates::GateVerdict,
    matched: usize,
}

fn compare_suites(args: &CompareArgs) -> Result<Compared, ReportError> {
    let base = Store::open(&args.base)?;
    let mut new = Store::open(&args.new)?;
    let accept = crate::trust::Code::parse_list(&args.accept).map_err(ReportError::Format)?;
    let opts = CompareOptions {
        ignore: args.ignore.clone(),
        metrics: args.metrics.clone(),
        bootstrap: BootstrapOptions {
            seed: args.seed,
            resamples: args.resamples,
            ..BootstrapOptions::default()
        },
        allow_changed: args.allow_changed.clone(),
        min_effect: args.min_effect.clone(),
        accept: accept.clone(),
        clock: args.clock,
    };
    let comparison = compare::compare(&base, &new, &opts)?;
    let baseline = gates::BaselineSuite {
        store: &base,
        ignore: &args.ignore,
        allow_changed: &args.allow_changed,
    };
    let verdicts = gates::evaluate_suite(&new, (&args.gates, &accept), Some(baseline), args.clock)?;
    if let Err(e) = new.write_gate_results("compare", &gates::to_records(&verdicts)) {
        warn_not_stored(&e);
    }
    let format = args.format;
    let style = TableStyle::detect();
    let sign = super::signoff::SignOff {
        junit: args.junit.clone(),
    };
    sign.write_junit(&new, "compare", &verdicts)?;
    super::signoff::step_summary(|| {
        let mut md = compare::render(&comparison, Format::Md, TableStyle::default())?;
        if !verdicts.is_empty() {
            md.push('\n');
            md.push_str(&gates::render(&verdicts, Format::Md, TableStyle::default()));
        }
        Ok(md)
    });
    let mut text = compare::render(&comparison, format, style)?;
    if args.paired {
        text = with_paired(
            text,
            &base,
            &new,
            &comparison,
            (format, style),
            &args.min_effect,
        )?;
    }
    if !verdicts.is_empty() {
        let gate_text = gates::render(
            &verdicts,
            if format == Format::Md {
                Format::Md
            } else {
                Format::Table
            },
            style,
        );
        if format == Format::Json {
            eprint!("{gate_text}");
        } else {
            text.push('\n');
            text.push_str(&gate_text);
        }
    }
    write_out(args.out.as_deref(), &text)?;
    Ok(Compared {
        verdict: gates::verdict_of(&verdicts),
        matched: comparison.pairs.len(),
    })
}

/// The comparison's text with the paired per-request comparison added: a table (or
/// Markdown section) after it, or a `paired` key in its JSON.
fn with_paired(
    text: String,
    base: &Store,
    new: &Store,
    comparison: &compare::Comparison,
    (format, style): (Format, TableStyle),
    min_effect: &[crate::report::min_effect::MinEffect],
) -> Result<String, ReportError> {
    use crate::report::{markdown, paired, table};
    let pairs = paired::paired(base, new, comparison, min_effect)?;
    let grid = paired::grid(&pairs);
    Ok(match format {
        Format::Json => {
            let mut v: serde_json::Value =
                serde_json::from_str(&text).map_err(ReportError::Json)?;
            if let Some(map) = v.as_object_mut() {
                map.insert("paired".into(), paired::json(&pairs));
            }
            let mut s = serde_json::to_string_pretty(&v).map_err(ReportError::Json)?;
            s.push('\n');
            s
        }
        Format::Md => format!(
            "{text}\n### Paired per request\n\n{}",
            markdown::render_grid(&grid)
        ),
        _ => format!(
            "{text}\npaired per request:\n{}",
            table::render_grid(&grid, style)
        ),
    })
}

/// Runs `perfplan compare`; the exit code of its gates.
pub fn run(args: CompareArgs) -> Ended {
    match compare_suites(&args).map_err(|e| failure_of(&e))? {
        Compared { matched: 0, .. } => Err(Failure::new(
            exit::NOTHING_MATCHED,
            format!(
                "no run of {} matches a run of {} (by its axis values, nor by its load's \
                 concurrency or rate): nothing was compared; `--ignore AXIS` leaves an axis \
                 out of the matching",
                args.new.display(),
                args.base.display()
            ),
        )),
        c => Ok(exit::of_gates(c.verdict)),
    }
}
