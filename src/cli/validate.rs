//! `perfplan validate PLAN`: load, check and expand a plan, and read every dataset file
//! its runs use (unless `--no-files`); report every problem.

use clap::Args;

use super::exit;
use super::failure::Ended;
use super::plan_args::{self, PlanArgs};

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// The baseline suite the plan's relative gates (`">= -5%"`) will be held against;
    /// without it, a relative gate is an error (as it is for `run`).
    #[arg(long, value_name = "DB")]
    pub baseline: Option<std::path::PathBuf>,
    /// Do not open the dataset files nor load the tokenizers (their existence is still
    /// checked): for a plan written on a machine that does not hold its data.
    #[arg(long)]
    pub no_files: bool,
}

pub fn run(args: &ValidateArgs) -> Ended {
    let plan = plan_args::load(&args.plan)?;
    let runs = plan_args::runs(&plan, &[])?;
    // Every problem at once: the gates' baselines and the files are both checked.
    let gates = plan_args::baseline_for_gates(&plan, &[], args.baseline.is_some());
    let files = match args.no_files {
        true => Ok(None),
        false => super::files::check_files(&plan, &runs).map(Some),
    };
    let files = match (gates, files) {
        (Ok(()), files) => files?,
        (Err(gates), Ok(_)) => return Err(gates),
        (Err(gates), Err(files)) => return Err(gates.and(files)),
    };
    println!(
        "{}: valid, {} run{}",
        args.plan.plan.display(),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    for (dataset, path, n) in files.map(|f| f.counts).unwrap_or_default() {
        println!("dataset `{dataset}`: {path}: {n} usable");
    }
    for run in &runs {
        if let Some(floor) = run.load.search().and_then(|t| t.floor.as_ref()) {
            println!(
                "note: run #{} ({}) searches with the success floor {}",
                run.ordinal,
                run.id,
                floor.describe()
            );
        }
    }
    Ok(exit::OK)
}
