//! `perfplan import evalscope -- ARGS` / `--from-script SCRIPT`: EvalScope perf command
//! lines → a plan on standard output (or `--out FILE`), with a comment block naming what
//! had no equivalent. The plan is loaded back like any file before it is written, and
//! what does not validate on this machine yet (an unset variable, a missing tokenizer)
//! is printed as a warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};

use super::exit;
use super::failure::{Ended, Failure};
use crate::evalscope::{self, script, ImportError};
use crate::plan::{emit, load_plan, process_env, LoadOptions};

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(subcommand)]
    pub from: ImportFrom,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ImportFrom {
    /// EvalScope perf command lines: `perfplan import evalscope -- --model M --url U …`.
    Evalscope(EvalscopeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct EvalscopeArgs {
    /// A shell script with `evalscope perf` command lines. It is executed, as
    /// `bash SCRIPT` would run it (your environment, this folder), with `evalscope`
    /// replaced by a recorder of its arguments: nothing is benchmarked.
    #[arg(long, alias = "from-file", value_name = "SCRIPT")]
    pub from_script: Option<PathBuf>,
    /// Write the plan to FILE instead of standard output (never over a file without --force).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Overwrite --out FILE.
    #[arg(long)]
    pub force: bool,
    /// Longest the script may run (a unit: "30s", "2m").
    #[arg(long, default_value = "2m", value_parser = crate::units::parse_duration)]
    pub timeout: Duration,
    /// The arguments of one `evalscope perf` command (after `--`; a leading `perf` is fine).
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

pub fn run(args: &ImportArgs) -> Ended {
    match &args.from {
        ImportFrom::Evalscope(a) => evalscope_cmd(a),
    }
}

/// The `evalscope perf` command lines to convert, from the script or the arguments.
fn commands(a: &EvalscopeArgs) -> Result<Vec<Vec<String>>, ImportError> {
    let Some(path) = &a.from_script else {
        let rest = match a.args.first().map(String::as_str) {
            Some("perf") => a.args[1..].to_vec(),
            _ => a.args.clone(),
        };
        if rest.is_empty() {
            return Err(ImportError::NoArguments);
        }
        return Ok(vec![rest]);
    };
    let mut out = Vec::new();
    for call in script::record(path, a.timeout)? {
        match call.split_first() {
            Some((sub, rest)) if sub == "perf" => out.push(rest.to_vec()),
            _ => eprintln!(
                "note: skipped `evalscope {}`: only `evalscope perf` is imported",
                call.join(" ")
            ),
        }
    }
    if out.is_empty() {
        return Err(ImportError::NoCommand);
    }
    Ok(out)
}

fn header(a: &EvalscopeArgs, count: usize, notes: &[String]) -> Vec<String> {
    let from = match &a.from_script {
        Some(p) => format!("from {}", p.display()),
        None => "from an evalscope perf command line".to_string(),
    };
    let mut h = vec![
        ":schema plan.schema.json".to_string(),
        format!("Written by `perfplan import evalscope` {from} ({count} command line(s))."),
        "`perfplan expand` lists its runs; `perfplan run` runs them (`perfplan schema > plan.schema.json` for editors).".into(),
        "TTFT and latency follow perfplan's stricter rules; `[plan] metric_definitions = \"evalscope\"` reports EvalScope's.".into(),
    ];
    if !notes.is_empty() {
        h.push(String::new());
        h.extend(notes.iter().map(|n| format!("- {n}")));
    }
    h
}

fn evalscope_cmd(a: &EvalscopeArgs) -> Ended {
    let commands = commands(a).map_err(|e| fail(&e))?;
    let imported = evalscope::import(&commands).map_err(|e| fail(&e))?;
    let text = emit::to_toml(&imported.plan, &header(a, commands.len(), &imported.notes));
    check_loads(&text, a.out.as_deref());
    for n in &imported.notes {
        eprintln!("note: {n}");
    }
    match &a.out {
        Some(path) => {
            super::init::write_new(path, &text, a.force)?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(exit::OK)
}

fn fail(e: &ImportError) -> Failure {
    let code = match e {
        ImportError::Script { .. } | ImportError::ScriptFailed { .. } | ImportError::NoCommand => {
            exit::IMPORT
        }
        _ => exit::INVALID,
    };
    Failure::of(code, e)
}

/// Loads the plan text as `perfplan run` will (from where it is written) and prints what
/// does not validate on this machine yet.
pub(super) fn check_loads(text: &str, out: Option<&Path>) {
    let path = out.map_or_else(|| PathBuf::from("plan.toml"), Path::to_path_buf);
    let mut files = BTreeMap::new();
    files.insert(path.display().to_string(), text.to_string());
    // Diagnostics name the plan where it goes: the `--out` file, or `<stdout>`.
    let opts = LoadOptions {
        files: Some(&files),
        shown_as: out.is_none().then_some("<stdout>"),
        ..LoadOptions::new(Vec::new(), &process_env)
    };
    let rendered = match load_plan(&path, &opts) {
        Err(report) => report.render(),
        Ok(plan) => match crate::planner::expand(&plan) {
            Ok(_) => return,
            Err(diags) => {
                let mut report = plan.report.clone();
                report.diagnostics = diags;
                report.render()
            }
        },
    };
    eprintln!(
        "warning: the plan does not validate on this machine yet (set what it needs, then `perfplan validate`):"
    );
    eprint!("{rendered}");
}
