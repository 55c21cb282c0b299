//! `perfplan rerun DIR`: executes again exactly the plan a suite stored (its text, the texts
//! of its imports, its `--set` overrides and seed) into a new folder, and says where the
//! environment differs from the recorded one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;

use super::exit;
use super::plan_args;
use crate::plan::{load_plan, process_env, LoadOptions};
use crate::runner::{self, RunOptions};
use crate::store::{GitInfo, HostFacts, Store, SuiteRow};

#[derive(Debug, Args)]
pub struct RerunArgs {
    /// The suite to repeat: an output folder or its results.db.
    pub dir: PathBuf,
    /// Output folder of the new suite (default `outputs/<plan name>/<UTC timestamp>/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: &RerunArgs) -> u8 {
    let suite = match Store::open(&args.dir).and_then(|s| s.suite()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}", crate::control::chain(&e));
            return exit::DATABASE;
        }
    };
    let info = &suite.info;
    let plan_path = PathBuf::from(
        info.plan_path
            .clone()
            .unwrap_or_else(|| format!("{}.toml", info.plan_name)),
    );
    let mut files = BTreeMap::new();
    files.insert(plan_path.display().to_string(), info.plan_text.clone());
    for (path, text) in &info.imports {
        files.insert(path.clone(), text.clone());
    }
    let opts = LoadOptions {
        files: Some(&files),
        ..LoadOptions::new(info.set_overrides.clone(), &process_env)
    };
    let plan = match load_plan(&plan_path, &opts) {
        Ok(p) => p,
        Err(report) => {
            eprint!("{}", report.render());
            return exit::INVALID;
        }
    };
    for line in differences(&suite, &plan.base_dir) {
        eprintln!("note: {line}");
    }
    let Some(runs) = plan_args::runs(&plan, &[]) else {
        return exit::INVALID;
    };
    if let Ok(stored) = Store::open(&args.dir).and_then(|s| s.runs()) {
        let changed = runs
            .iter()
            .filter(|r| !stored.iter().any(|s| s.id == r.id))
            .count();
        if changed > 0 {
            eprintln!("note: {changed} run(s) resolve to other settings than recorded (environment variables or files changed), so their ids differ");
        }
    }
    let opts = RunOptions {
        out: args.out.clone(),
        resume: None,
        debug: false,
        progress_json: None,
    };
    match runner::run_suite(&plan, &runs, &opts) {
        Ok(outcome) => super::report::after_run(&outcome.dir, &[], None),
        Err(e) => {
            eprintln!("error: {}", crate::control::chain(&e));
            exit::of_runner_error(&e)
        }
    }
}

/// Where this machine and checkout differ from what the suite recorded.
pub fn differences(suite: &SuiteRow, plan_dir: &Path) -> Vec<String> {
    let info = &suite.info;
    let mut out = Vec::new();
    let version = env!("CARGO_PKG_VERSION");
    if info.perfplan_version != version {
        out.push(format!(
            "perfplan {version} reruns a suite recorded by perfplan {}",
            info.perfplan_version
        ));
    }
    let host = HostFacts::detect();
    let rec = &info.host;
    if host.cpu_model != rec.cpu_model || host.cores != rec.cores {
        out.push(format!(
            "host differs: {} × {} now, {} × {} recorded",
            host.cores, host.cpu_model, rec.cores, rec.cpu_model
        ));
    }
    if host.os != rec.os {
        out.push(format!("OS differs: {} now, {} recorded", host.os, rec.os));
    }
    let dir = if plan_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        plan_dir
    };
    match (GitInfo::detect(dir), &info.git) {
        (Some(now), Some(then)) if now.revision != then.revision => out.push(format!(
            "plan repository at {} now, {} recorded",
            now.revision, then.revision
        )),
        (Some(now), _) if now.dirty => {
            out.push("plan repository has uncommitted changes".to_string())
        }
        _ => {}
    }
    out.push(
        "datasets, tokenizers and prefix files are read again from disk; they were not stored"
            .to_string(),
    );
    out
}
