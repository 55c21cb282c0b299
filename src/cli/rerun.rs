//! `perfplan rerun DIR`: executes again exactly the plan a suite stored (its text, the texts
//! of its imports, its `--set` overrides and seed) into a new folder, and says where the
//! environment differs from the recorded one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;

use super::exit;
use super::failure::{Ended, Failure};
use super::plan_args;
use crate::plan::{load_plan, process_env, LoadOptions};
use crate::store::{GitInfo, HostFacts, Store, StoredSecret, SuiteInfo, SuiteRow};
use crate::suite::{self, RunOptions};

#[derive(Debug, Args)]
pub(crate) struct RerunArgs {
    /// The suite to repeat: an output folder or its results.db.
    pub dir: PathBuf,
    /// Output folder of the new suite (default `outputs/<plan name>/<UTC timestamp>/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: &RerunArgs) -> Ended {
    let suite = Store::open(&args.dir)
        .and_then(|s| s.suite())
        .map_err(|e| Failure::of(exit::DATABASE, &e))?;
    let info = &suite.info;
    if let Some(message) = missing_secrets(&info.secrets, &process_env) {
        return Err(Failure::rendered(exit::INVALID, message));
    }
    let (plan_path, files) = stored_files(info);
    let sets: Vec<String> = info
        .set_overrides
        .iter()
        .map(|s| with_secrets(s, &info.secrets, &process_env))
        .collect();
    let opts = LoadOptions {
        files: Some(&files),
        ..LoadOptions::new(sets, &process_env)
    };
    let plan = load_plan(&plan_path, &opts)
        .map_err(|report| Failure::rendered(exit::INVALID, report.render()))?;
    for line in differences(&suite, &plan.base_dir) {
        eprintln!("note: {line}");
    }
    let runs = plan_args::runs(&plan, &[])?;
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
        progress_every: None,
        search: Some(&crate::search::DRIVER),
        barrier: None,
        accept: Vec::new(),
        // A rerun's plan is the stored text, not a file `run --resume` could name.
        resume_args: None,
        tokenizers: crate::tokenize::TokenizerCache::new(),
        sinks: Default::default(),
    };
    let outcome = suite::run_suite(&plan, &runs, &opts)
        .map_err(|e| Failure::of(exit::of_suite_error(&e), &e))?;
    super::report::after_run(&outcome.dir, &[], None, &[])
}

/// What `rerun` needs from the environment and does not find: the variables the suite's
/// literal secrets were stored as. `None` when every one is set.
pub(crate) fn missing_secrets(
    secrets: &[StoredSecret],
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let missing: Vec<&StoredSecret> = secrets
        .iter()
        .filter(|s| env(&s.variable).is_none())
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut out = String::from(
        "error: the suite's plan held secret header values written into it; perfplan stored \
         them as environment variables, never as values, so rerun needs them from the \
         environment:\n",
    );
    for s in missing {
        out.push_str(&format!(
            "  header `{}` of endpoint `{}`: set {}\n",
            s.header, s.endpoint, s.variable
        ));
    }
    Some(out)
}

/// A stored `--set` with the suite's secret variables filled from the environment
/// (`--set` values are not interpolated, so they are filled here).
fn with_secrets(
    set: &str,
    secrets: &[StoredSecret],
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let mut out = set.to_string();
    for s in secrets {
        let reference = format!("${{{}}}", s.variable);
        if let (true, Some(value)) = (out.contains(&reference), env(&s.variable)) {
            out = out.replace(&reference, &value);
        }
    }
    out
}

/// The plan's path and the stored texts by the paths the loader will ask for. With the
/// plan's folder recorded (and still there), the plan is loaded from it, so that its
/// relative paths (imports, datasets, tokenizers, `@file` texts) resolve as when it ran,
/// from any working directory; older suites load from the path as given then.
pub(crate) fn stored_files(info: &SuiteInfo) -> (PathBuf, BTreeMap<String, String>) {
    let given = PathBuf::from(
        info.plan_path
            .clone()
            .unwrap_or_else(|| format!("{}.toml", info.plan_name)),
    );
    let dir = info
        .plan_dir
        .as_deref()
        .map(PathBuf::from)
        .filter(|d| d.is_dir());
    let given_dir = given.parent().unwrap_or(Path::new("")).to_path_buf();
    let moved = |p: &Path| -> PathBuf {
        match (&dir, p.strip_prefix(&given_dir)) {
            (Some(d), Ok(rel)) => d.join(rel),
            _ => p.to_path_buf(),
        }
    };
    let plan_path = moved(&given);
    let mut files = BTreeMap::new();
    files.insert(plan_path.display().to_string(), info.plan_text.clone());
    for (path, text) in &info.imports {
        files.insert(moved(Path::new(path)).display().to_string(), text.clone());
    }
    (plan_path, files)
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
    let from = if plan_dir.is_absolute() {
        format!(
            " (relative paths from {}, the plan's folder)",
            plan_dir.display()
        )
    } else {
        String::new()
    };
    out.push(format!(
        "datasets, tokenizers and prefix files are read again from disk; they were not stored{from}"
    ));
    out
}
