//! `perfplan expand PLAN [--json]`: the ordered runs, as a table or as JSON.

use clap::Args;
use comfy_table::{presets, Table};
use serde_json::{json, Value};

use super::exit;
use super::plan_args::{self, OnlyArgs, PlanArgs};
use crate::planner::{display_value, RunSpec};

#[derive(Debug, Args)]
pub struct ExpandArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub only: OnlyArgs,
    /// Print `[{"ordinal", "id", "axes", "settings"}]` instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ExpandArgs) -> u8 {
    let Some(plan) = plan_args::load(&args.plan) else {
        return exit::INVALID;
    };
    let Some(runs) = plan_args::runs(&plan, &args.only.only) else {
        return exit::INVALID;
    };
    if args.json {
        let list: Vec<Value> = runs.iter().map(run_json).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        );
    } else {
        println!("{}", table(&runs));
    }
    exit::OK
}

/// The JSON form of one run, as `expand --json` prints it.
pub fn run_json(run: &RunSpec) -> Value {
    json!({
        "ordinal": run.ordinal,
        "id": run.id,
        "axes": run.axes,
        "settings": run.redacted_settings(),
    })
}

fn table(runs: &[RunSpec]) -> Table {
    let mut axes: Vec<String> = Vec::new();
    for run in runs {
        for key in run.axes.keys() {
            if !axes.contains(key) && key != "load" {
                axes.push(key.clone());
            }
        }
    }
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["#".to_string(), "id".to_string()];
    header.extend(axes.iter().cloned());
    header.push("load".into());
    t.set_header(header);
    for run in runs {
        let mut row = vec![run.ordinal.to_string(), run.id.clone()];
        for axis in &axes {
            row.push(
                run.axes
                    .get(axis)
                    .map_or_else(|| "—".to_string(), display_value),
            );
        }
        let load = serde_json::to_value(&run.settings.load).unwrap_or(Value::Null);
        row.push(display_value(&load));
        t.add_row(row);
    }
    t
}
