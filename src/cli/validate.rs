//! `perfplan validate PLAN`: load, check and expand a plan; report every problem.

use clap::Args;

use super::exit;
use super::plan_args::{self, PlanArgs};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// The baseline suite the plan's relative gates (`">= -5%"`) will be held against;
    /// without it, a relative gate is an error (as it is for `run`).
    #[arg(long, value_name = "DB")]
    pub baseline: Option<std::path::PathBuf>,
}

pub fn run(args: &ValidateArgs) -> u8 {
    let Some(plan) = plan_args::load(&args.plan) else {
        return exit::INVALID;
    };
    let Some(runs) = plan_args::runs(&plan, &[]) else {
        return exit::INVALID;
    };
    if !plan_args::baseline_for_gates(&plan, &[], args.baseline.is_some()) {
        return exit::INVALID;
    }
    println!(
        "{}: valid, {} run{}",
        args.plan.plan.display(),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    for run in &runs {
        if let Some(floor) = crate::planner::search::success_floor(&run.settings.load) {
            println!(
                "note: run #{} ({}) searches with the success floor {}",
                run.ordinal,
                run.id,
                floor.describe()
            );
        }
    }
    exit::OK
}
