//! `perfplan history DIR_OR_DB...`: many suites of one plan in release order, each
//! matched run's metrics over the releases with their intervals, each step judged by
//! `compare`'s noise rule; a table (or Markdown, CSV, JSON) and an HTML page; gates
//! against the history (`--gate "ttft_p99 <= median(last 5) +5%"`).

use std::path::PathBuf;

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use super::format_arg::FormatParser;
use super::report::write_out;
use crate::report::bootstrap::BootstrapOptions;
use crate::report::compare::CompareOptions;
use crate::report::history::{self, HistoryOptions, OrderBy};
use crate::report::{
    history_gate, history_html, history_render, Format, ReportError, TableStyle, Writer,
};

/// Many suites of one plan, release over release.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// The suites (databases or output folders; a shell glob is fine).
    #[arg(required = true, num_args = 1..)]
    pub suites: Vec<PathBuf>,
    /// Order by this label of the environment record (`[plan] labels`, e.g. `release`),
    /// compared as a version; `time` orders by the suites' creation time.
    #[arg(long, default_value = "time")]
    pub by: String,
    /// Only suites of this plan (default: the plan most of them ran; others are left out
    /// and said).
    #[arg(long)]
    pub plan: Option<String>,
    /// Metrics followed (comma-separated; default ttft_p99, tpot_mean, output_tps).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Axes left out of the matching; repeatable.
    #[arg(long)]
    pub ignore: Vec<String>,
    #[arg(long, value_parser = FormatParser(Writer::History), default_value = "table")]
    pub format: Format,
    /// Also write the HTML page (a line over releases per run and metric) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// A gate against the history, `METRIC OP median(last N) ±PCT%` (or `mean`, `min`,
    /// `max`; `last N` counts the releases before the newest); repeatable.
    #[arg(long = "gate", value_name = "GATE")]
    pub gates: Vec<String>,
    /// The smallest change of a metric called a change, METRIC=PCT; repeatable.
    #[arg(long = "min-effect", value_name = "METRIC=PCT")]
    pub min_effect: Vec<crate::report::min_effect::MinEffect>,
    /// Accept a verdict reason by its code (comma-separated or repeated).
    #[arg(long = "accept", value_name = "REASON", value_delimiter = ',')]
    pub accept: Vec<String>,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = BootstrapOptions::default().seed)]
    pub seed: u64,
    /// Bootstrap resamples per metric.
    #[arg(long, default_value_t = BootstrapOptions::default().resamples)]
    pub resamples: u32,
    /// Write here instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The clock of every release's answer times, for the lines, their noise and the
    /// gates: `kernel` (when the bytes arrived) or `user` (when the client read them: a
    /// suite stored before kernel receive stamps is on it). Default: the newest release's
    /// `[report] clock`, else kernel.
    #[arg(long, value_name = "CLOCK", value_parser = super::report::parse_clock)]
    pub clock: Option<crate::record::Clock>,
}

fn run_history(args: &HistoryArgs) -> Ended {
    let accept = crate::trust::Code::parse_list(&args.accept).map_err(ReportError::Format)?;
    let gates = args
        .gates
        .iter()
        .map(|g| history_gate::HistoryGate::parse(g))
        .collect::<Result<Vec<_>, _>>()?;
    // A gate's metric is followed too.
    let mut metrics = args.metrics.clone();
    if metrics.is_empty() && !gates.is_empty() {
        metrics = history::DEFAULT_METRICS.map(String::from).to_vec();
    }
    for g in &gates {
        if !metrics.contains(&g.metric) {
            metrics.push(g.metric.clone());
        }
    }
    let opts = HistoryOptions {
        by: match args.by.as_str() {
            "time" => OrderBy::Time,
            label => OrderBy::Label(label.to_string()),
        },
        plan: args.plan.clone(),
        compare: CompareOptions {
            ignore: args.ignore.clone(),
            metrics,
            bootstrap: BootstrapOptions {
                seed: args.seed,
                resamples: args.resamples,
                ..BootstrapOptions::default()
            },
            allow_changed: Vec::new(),
            min_effect: args.min_effect.clone(),
            accept,
            clock: args.clock,
        },
    };
    let h = history::history(&args.suites, &opts)?;
    for (source, why) in &h.skipped {
        eprintln!("note: left out {source}: {why}");
    }
    if h.releases.is_empty() {
        return Err(Failure::new(
            exit::NOTHING_MATCHED,
            format!("no suite of plan `{}` to follow", h.plan),
        ));
    }
    let format = args.format;
    let mut text = history_render::render(&h, format, TableStyle::detect())?;
    let outcomes: Vec<_> = gates.iter().flat_map(|g| g.evaluate(&h)).collect();
    if !outcomes.is_empty() {
        let gate_text = history_gate::render(&outcomes);
        if format == Format::Table || format == Format::Md {
            text.push('\n');
            text.push_str(&gate_text);
        } else {
            eprint!("{gate_text}");
        }
    }
    write_out(args.out.as_deref(), &text)?;
    if let Some(path) = &args.html {
        std::fs::write(path, history_html::render(&h)).map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(match outcomes.iter().any(|o| o.passed == Some(false)) {
        true => exit::GATE_FAILED,
        false => exit::OK,
    })
}

/// Runs `perfplan history`; the exit code of its gates.
pub fn run(args: HistoryArgs) -> Ended {
    run_history(&args)
}
