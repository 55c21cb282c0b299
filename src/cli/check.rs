//! `perfplan check PLAN`: one small request per endpoint × API × prompt mode, printed as
//! a table of pass/warn/fail with advice. Exit 3 (endpoint unusable) on any failure.

use clap::Args;
use comfy_table::{presets, ContentArrangement, Table};

use super::exit;
use super::failure::{Ended, Failure};
use super::plan_args::{self, OnlyArgs, PlanArgs};
use crate::plan::LoadedPlan;
use crate::planner::RunSpec;
use crate::preflight::{self as check, CheckRow, Verdict};

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub only: OnlyArgs,
}

pub fn run(args: &CheckArgs) -> Ended {
    let plan = plan_args::load(&args.plan)?;
    let runs = plan_args::runs(&plan, &args.only.only)?;
    check_runs(&plan, &runs)
}

/// Checks the endpoints of `runs` and prints the table; the exit code (ENDPOINT when a
/// check failed).
pub(crate) fn check_runs(plan: &LoadedPlan, runs: &[RunSpec]) -> Ended {
    let dir = std::env::temp_dir().join(format!("perfplan-check-{}", std::process::id()));
    let rows = check::check_plan(plan, runs, &dir);
    let code = match rows {
        Ok(rows) => {
            println!("{}", table(&rows));
            let count = |v| rows.iter().filter(|r| r.verdict == v).count();
            let (fail, warn) = (count(Verdict::Fail), count(Verdict::Warn));
            eprintln!(
                "perfplan check: {} passed, {warn} warnings, {fail} failed",
                rows.len() - fail - warn
            );
            Ok(if fail > 0 { exit::ENDPOINT } else { exit::OK })
        }
        Err(e) => Err(Failure::of(exit::of_suite_error(&e), &e)),
    };
    if dir.join("servers").exists() {
        eprintln!(
            "perfplan check: server logs in {}",
            dir.join("servers").display()
        );
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    code
}

fn table(rows: &[CheckRow]) -> Table {
    let mut t = Table::new();
    let width = t.width().unwrap_or(140);
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(["endpoint", "mode", "check", "result", "detail", "advice"]);
    for r in rows {
        t.add_row([
            r.endpoint.as_str(),
            r.mode.as_str(),
            r.check.as_str(),
            r.verdict.as_str(),
            r.detail.as_str(),
            r.advice.as_deref().unwrap_or(""),
        ]);
    }
    t
}
