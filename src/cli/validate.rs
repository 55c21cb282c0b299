//! `perfplan validate PLAN`: load, check and expand a plan; report every problem.

use clap::Args;

use super::exit;
use super::plan_args::{self, PlanArgs};

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
}

pub fn run(args: &ValidateArgs) -> u8 {
    let Some(plan) = plan_args::load(&args.plan) else {
        return exit::INVALID;
    };
    let Some(runs) = plan_args::runs(&plan, &[]) else {
        return exit::INVALID;
    };
    println!(
        "{}: valid, {} run{}",
        args.plan.plan.display(),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    exit::OK
}
