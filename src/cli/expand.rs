//! `perfplan expand PLAN [--json]`: the ordered runs, as a table or as JSON.

use clap::Args;
use comfy_table::{presets, Table};
use serde_json::{json, Value};

use super::exit;
use super::failure::Ended;
use super::plan_args::{self, OnlyArgs, PlanArgs};
use crate::planner::{display_value, RunSpec};

#[derive(Debug, Args)]
pub(crate) struct ExpandArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub only: OnlyArgs,
    /// Print `[{"ordinal", "id", "axes", "settings"}]` instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ExpandArgs) -> Ended {
    let plan = plan_args::load(&args.plan)?;
    let runs = plan_args::runs(&plan, &args.only.only)?;
    if args.json {
        let list: Vec<Value> = runs.iter().map(run_json).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        );
    } else {
        println!("{}", table(&runs));
    }
    Ok(exit::OK)
}

/// The JSON form of one run, as `expand --json` prints it.
pub(crate) fn run_json(run: &RunSpec) -> Value {
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
    let mixed = runs.iter().any(|r| r.settings.mix.is_some());
    if mixed {
        header.push("mix".into());
    }
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
        let load = run.load_as_written();
        row.push(display_value(&load));
        if mixed {
            row.push(mix_label(run));
        }
        t.add_row(row);
    }
    t
}

/// A mix's classes as the table shows them: `chat 0.6, rag 0.3 (rag-2k, out 16), …`
/// (each class's name and weight, then its dataset when named apart, its output length
/// and its model when its own); `—` for a run that is not a mix.
fn mix_label(run: &RunSpec) -> String {
    let Some(classes) = &run.settings.mix else {
        return "—".into();
    };
    let list: Vec<String> = classes
        .iter()
        .map(|c| {
            let mut own = Vec::new();
            if c.dataset.name != c.name {
                own.push(c.dataset.name.clone());
            }
            if let Some(out) = c.output_tokens {
                own.push(format!("out {}", display_value(&json!(out))));
            }
            if let Some(model) = &c.model {
                own.push(model.name.clone());
            }
            match own.is_empty() {
                true => format!("{} {}", c.name, c.weight),
                false => format!("{} {} ({})", c.name, c.weight, own.join(", ")),
            }
        })
        .collect();
    list.join(", ")
}
