//! Arguments shared by the commands that read a plan, and loading it with diagnostics.

use std::path::PathBuf;

use clap::Args;

use super::exit;
use super::failure::Failure;

use crate::plan::{load_plan_partial, process_env, Failed, LoadOptions, LoadedPlan};
use crate::planner::{self, RunSpec};

#[derive(Debug, Clone, Args)]
pub(crate) struct PlanArgs {
    /// The plan file (.toml, .yaml or .yml).
    pub plan: PathBuf,
    /// Override any key of the plan: `--set datasets.random-1k.input_tokens=8192` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct OnlyArgs {
    /// Keep only the runs matching every key=value (`--only endpoint=cache-on,cache_state=warm`).
    #[arg(long = "only", value_name = "KEY=VALUE[,..]")]
    pub only: Vec<String>,
}

/// Loads a plan, printing its warnings to stderr; its problems are the failure.
pub fn load(args: &PlanArgs) -> Result<LoadedPlan, Failure> {
    let opts = LoadOptions::new(args.sets.clone(), &process_env);
    match load_plan_partial(&args.plan, &opts) {
        Ok(plan) => {
            for w in plan.report.warnings() {
                eprint!("{}", w.render(&plan.report.sources));
            }
            Ok(plan)
        }
        Err(failed) => Err(Failure::rendered(
            exit::INVALID,
            every_problem(*failed).render(),
        )),
    }
}

/// Every problem of a plan that did not load: the loader's, and the planner's on what
/// could still be read of it (its faulty values left out), so that one pass reports
/// them all. A planner's problem at or around a value left out is a consequence of
/// leaving it out and is not reported.
pub(crate) fn every_problem(failed: Failed) -> crate::plan::diag::Report {
    let Failed {
        mut report,
        partial,
        pruned,
    } = failed;
    let Some(plan) = partial else {
        return report;
    };
    let diags = match planner::expand_partial(&plan) {
        Ok(expansion) => expansion.warnings,
        Err(diags) => diags,
    };
    for d in diags {
        // The loader checks references too: the same problem is said once.
        let known = report
            .diagnostics
            .iter()
            .any(|k| k.severity == d.severity && k.message == d.message);
        if !pruned.covers(&d, &plan.tree) && !known {
            report.diagnostics.push(d);
        }
    }
    report
}

/// Expands a loaded plan and applies `--only`, printing its warnings; its problems are
/// the failure.
pub fn runs(plan: &LoadedPlan, only: &[String]) -> Result<Vec<RunSpec>, Failure> {
    let expansion = match planner::expand(plan) {
        Ok(e) => e,
        Err(diags) => {
            let mut report = plan.report.clone();
            report.diagnostics = diags;
            return Err(Failure::rendered(exit::INVALID, report.render()));
        }
    };
    for w in &expansion.warnings {
        eprint!("{}", w.render(&plan.report.sources));
    }
    planner::select(expansion.runs, only).map_err(|msg| Failure::new(exit::INVALID, msg))
}

/// `--accept` codes, each a verdict reason's code; an unknown one fails with the nearest
/// code.
pub fn accepted(codes: &[String]) -> Result<Vec<crate::trust::Code>, Failure> {
    crate::trust::Code::parse_list(codes).map_err(|e| Failure::new(exit::INVALID, e))
}

/// Whether the plan's and `--gate`'s relative gates have the baseline they need: a
/// located error for each that has none.
pub(crate) fn baseline_for_gates(
    plan: &LoadedPlan,
    cli_gates: &[String],
    has_baseline: bool,
) -> Result<(), Failure> {
    let cli: Vec<(String, String)> = cli_gates
        .iter()
        .filter_map(|g| crate::report::gates::parse_gate_arg(g).ok())
        .collect();
    let diags =
        crate::plan::baseline_gates::without_baseline(&plan.spec, &plan.tree, &cli, has_baseline);
    if diags.is_empty() {
        return Ok(());
    }
    let mut report = plan.report.clone();
    report.diagnostics = diags;
    Err(Failure::rendered(exit::INVALID, report.render()))
}
