//! `perfplan run PLAN`: expand, execute, store, report; exit 1 if a gate fails.

use std::path::PathBuf;

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use super::plan_args::{self, OnlyArgs, PlanArgs};
use super::quick::QuickArgs;
use crate::suite::{self, RunOptions};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (.toml, .yaml or .yml); left out for a plan-free run with `--url`.
    #[arg(required_unless_present = "url")]
    pub plan: Option<PathBuf>,
    /// Override any key of the plan: `--set datasets.random-1k.input_tokens=8192` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", conflicts_with = "url")]
    pub sets: Vec<String>,
    #[command(flatten)]
    pub quick: QuickArgs,
    #[command(flatten)]
    pub only: OnlyArgs,
    /// Output folder (default `outputs/<plan name>/<UTC timestamp>/`).
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the suite stored in DIR: finished runs are skipped, others rerun.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Also log every request body and response in `perfplan.log` (secrets are never logged).
    #[arg(long)]
    pub debug: bool,
    /// Append progress as JSON lines (run start, progress each second, run end with its
    /// metrics, suite end) to FILE, for dashboards and CI logs.
    #[arg(long, value_name = "FILE")]
    pub progress_json: Option<PathBuf>,
    /// Where stderr is not a terminal, a progress line (done/total, ok/failed, rate, TTFT
    /// p50) every DURATION to stderr and perfplan.log; `0` or `off` for none. Default
    /// 10s without a terminal, none on one (the bar shows).
    #[arg(long, value_name = "DURATION|off", value_parser = crate::suite::parse_progress_every)]
    pub progress_every: Option<std::time::Duration>,
    /// An extra gate, METRIC=CONDITION (e.g. `ttft_p99=<=2s`); repeatable.
    #[arg(long = "gate", value_name = "METRIC=CONDITION")]
    pub gates: Vec<String>,
    /// A baseline suite for relative gates (`output_tps = ">= -5%"`): a database or output folder.
    #[arg(long, value_name = "DB")]
    pub baseline: Option<PathBuf>,
    /// A setting runs may differ in from their `--baseline` run without failing relative
    /// gates (see `perfplan compare --allow-changed`); comma-separated or repeated.
    #[arg(long = "allow-changed", value_name = "SETTING", value_delimiter = ',')]
    pub allow_changed: Vec<String>,
    /// Accept a verdict reason by its code (`counts_estimated`, `client_bound`, …): it is
    /// shown and recorded, but no longer makes a run suspect or invalid; comma-separated
    /// or repeated; added to the plan's `[trust] accept`.
    #[arg(long = "accept", value_name = "REASON", value_delimiter = ',')]
    pub accept: Vec<String>,
    /// Also write the gate verdicts as JUnit XML to FILE (one test case per gate and run).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    #[arg(long = "export", value_name = "KIND=TARGET", help = super::export::help(
        "Push the metrics where the team looks, each run's as it is stored (a failed push \
         is a warning) and the suite's when it ends (after its report and gates, as `report \
         --export`)"
    ))]
    pub export: Vec<super::export::Export>,
    /// Run `perfplan check` first and stop if it finds a failure.
    #[arg(long)]
    pub check: bool,
    /// Take share K of N of every run's load (concurrency, requests and warmup split as
    /// evenly as possible, rate / N, every Nth trace record); run the same plan with 1/N …
    /// N/N on N machines, then unite the results with `perfplan merge`. `auto`: K/N from a
    /// Kubernetes Indexed Job (JOB_COMPLETION_INDEX + 1 of PERFPLAN_SHARDS) or a Slurm step
    /// (SLURM_PROCID + 1 of SLURM_NTASKS). With `--out DIR`, the shard's results go to
    /// `DIR/shard-K-of-N`, so every shard can share one DIR.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<crate::distribute::shard::ShardChoice>,
    /// Start the first run's load at this wall-clock instant, so that shards begin
    /// together: RFC 3339 UTC (`2026-11-29T12:00:00Z`) or unix seconds. A warm run's
    /// priming pass comes before it; an instant already past starts at once, with a warning.
    #[arg(long, value_name = "TIME", value_parser = crate::distribute::start_at::parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,
    /// The start barrier of a sharded suite, so every run starts on all shards at once:
    /// HOST:PORT of shard 1 (it listens there, the others connect), HOST, :PORT, or `off`.
    /// Default: $PERFPLAN_BARRIER, else with `--shard auto` the engine's naming (the
    /// pod of index 0 in the Job's headless Service; the first node of the Slurm step).
    #[arg(long, value_name = "HOST:PORT|off")]
    pub barrier: Option<String>,
    /// With `--shard`, `--out DIR` and the start barrier: after its suite, shard 1 waits
    /// until every shard's suite has ended (at most `--barrier-timeout`), then merges
    /// DIR's `shard-K-of-N` folders into `DIR/merged` and reports it, judging the plan's
    /// gates on the merged suite; the other shards only say they are done.
    #[arg(long)]
    pub merge: bool,
    /// How long the barrier waits for a shard to arrive at a run (or to connect); a
    /// shard later than that is named and the suite stops with exit code 11.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub barrier_timeout: crate::units::HumanDuration,
}

/// The plan of `run`: its file, or the plan-free flags (`--url`).
fn load_plan(args: &RunArgs) -> Result<crate::plan::LoadedPlan, Failure> {
    match &args.plan {
        Some(path) => {
            let file = PlanArgs {
                plan: path.clone(),
                sets: args.sets.clone(),
            };
            plan_args::load(&file)
        }
        None => super::quick::load(&args.quick),
    }
}

/// What is checked before anything is sent: the `--accept` codes (returned), relative
/// gates' baseline, and that `--resume` continues this very plan.
fn before_anything(
    args: &RunArgs,
    plan: &crate::plan::LoadedPlan,
) -> Result<Vec<crate::trust::Code>, Failure> {
    let accept = plan_args::accepted(&args.accept)?;
    plan_args::baseline_for_gates(plan, &args.gates, args.baseline.is_some())?;
    if let Some(why) = args
        .resume
        .as_deref()
        .and_then(|dir| super::resume_check::refusal(plan, dir))
    {
        return Err(Failure::new(exit::INVALID, why));
    }
    Ok(accept)
}

pub fn run(args: &RunArgs) -> Ended {
    let shard = super::shard::resolve(args)?;
    let plan = load_plan(args)?;
    let runs = plan_args::runs(&plan, &args.only.only)?;
    let accept = before_anything(args, &plan)?;
    super::shard::usable(args, shard.map(|s| s.0), &runs)?;
    // Every dataset file the runs read, before any request or output folder.
    let files = super::files::check_files(&plan, &runs)?;
    if args.check {
        let code = super::check::check_runs(&plan, &runs)?;
        if code != exit::OK {
            eprintln!("perfplan: the check failed; nothing was run");
            return Ok(code);
        }
    }
    let barrier = super::shard::barrier(args, shard, &plan)?;
    let single = shard.is_some_and(|s| s.0.n == 1);
    super::shard::merge_usable(args, barrier.is_some() || single)?;
    let opts = RunOptions {
        out: args.out.clone(),
        resume: args.resume.clone(),
        debug: args.debug,
        progress_json: args.progress_json.clone(),
        progress_every: args.progress_every,
        search: Some(&crate::search::DRIVER),
        barrier: barrier.clone().map(|b| b as _),
        resume_args: Some(resume_args(std::env::args().skip(1))),
        tokenizers: files.tokenizers,
        sinks: super::export::sinks(&args.export, &accept),
        accept,
    };
    let sharding = crate::distribute::shard::ShardOptions {
        shard: shard.map(|s| s.0),
        start_at: args.start_at,
    };
    let result = suite::run_suite_sharded(&plan, &runs, &opts, sharding);
    let merge = super::shard::finish(args, barrier.as_deref(), shard.map(|s| s.0));
    let outcome = result.map_err(|e| Failure::of(exit::of_suite_error(&e), &e))?;
    let code = report_outcome(args, &outcome);
    match merge? {
        Some(out) if code == exit::OK || code == exit::RUN_FAILED => {
            let merged = super::merge::merge_and_report(&out.join("merged"), &[out])?;
            Ok(if merged == exit::OK { code } else { merged })
        }
        _ => Ok(code),
    }
}

/// The command line of this `run` without its output folder (`--out`, `--resume`), for
/// the command that continues the suite: `perfplan` and every other word as given.
fn resume_args(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = vec!["perfplan".to_string()];
    let mut skip_next = false;
    for a in args {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        match a.as_str() {
            "--out" | "--resume" => skip_next = true,
            _ if a.starts_with("--out=") || a.starts_with("--resume=") => {}
            _ => out.push(a),
        }
    }
    out
}

/// Prints how the suite ended and reports it, judging its gates (a shard's only as notes).
/// A report or export that fails is said here, and its code returned unless the gates'
/// or the interruption's says more.
fn report_outcome(args: &RunArgs, outcome: &suite::SuiteOutcome) -> u8 {
    let line = format!(
        "perfplan: {} runs done, {} skipped, {} failed{}; results in {}",
        outcome.done,
        outcome.skipped,
        outcome.failed,
        if outcome.interrupted {
            ", interrupted"
        } else {
            ""
        },
        outcome.dir.display()
    );
    eprintln!("{line}");
    super::report::append_log(&outcome.dir, &format!("{line}\n"));
    let sign = super::signoff::SignOff {
        junit: args.junit.clone(),
    };
    let code = super::report::after_run_signed(
        &outcome.dir,
        &args.gates,
        args.baseline.as_deref(),
        &args.allow_changed,
        &sign,
    )
    .unwrap_or_else(Failure::print);
    let code = super::shard::gate_code(args, code);
    if let Err(failed) =
        super::export::export_suite(&outcome.dir, (&args.accept, None), &args.export)
    {
        let failed = failed.print();
        if code == exit::OK {
            return failed;
        }
    }
    if outcome.interrupted {
        let cmd =
            crate::suite::resume_command(&resume_args(std::env::args().skip(1)), &outcome.dir);
        eprintln!("perfplan: interrupted; continue the suite with:\n  {cmd}");
        return exit::INTERRUPTED;
    }
    if outcome.failed > 0 && code == exit::OK {
        return exit::RUN_FAILED;
    }
    code
}
