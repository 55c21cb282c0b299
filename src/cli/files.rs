//! The files of a plan's runs checked before any request (`run`, and `validate` unless
//! `--no-files`): every dataset file each run reads, through `dataset::check`, each
//! problem printed located (file and line) with the dataset it belongs to, and every
//! tokenizer the runs' models (and mix classes' models) name, loaded, all at once.

use std::path::PathBuf;

use super::exit;
use super::failure::Failure;
use crate::dataset::check::{check, FileProblem};
use crate::plan::{DatasetPlan, LoadedPlan};
use crate::planner::RunSpec;
use crate::tokenize::TokenizerCache;

/// What the check of a plan's files found: each dataset file with its usable entries,
/// and the tokenizers loaded (the suite reuses them rather than loading them again).
pub(crate) struct FilesChecked {
    pub counts: Vec<(String, String, usize)>,
    pub tokenizers: TokenizerCache,
}

/// Every `(model, tokenizer path)` the runs use, each path once.
fn tokenizer_paths(plan: &LoadedPlan, runs: &[RunSpec]) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for run in runs {
        let models = std::iter::once(&run.settings.model).chain(
            run.settings
                .mix
                .iter()
                .flatten()
                .filter_map(|c| c.model.as_ref()),
        );
        for model in models {
            if let Some(path) = model.spec.tokenizer.as_deref() {
                let full = plan.base_dir.join(path);
                if !out.iter().any(|(_, p)| *p == full) {
                    out.push((model.name.clone(), full));
                }
            }
        }
    }
    out
}

/// Loads every tokenizer the runs use into `cache`; a line for each failure.
fn check_tokenizers(plan: &LoadedPlan, runs: &[RunSpec], cache: &TokenizerCache) -> Vec<String> {
    let mut errors = Vec::new();
    for (model, path) in tokenizer_paths(plan, runs) {
        if let Err(e) = cache.load(&path) {
            errors.push(format!(
                "error: model `{model}`: {} (fix `tokenizer` in [models.{model}], or leave \
                 its runs out with --only)",
                crate::control::chain(&e)
            ));
        }
    }
    errors
}

/// The golden file of `[checks]` (its `path`), every bad line said as `file:line`.
fn check_golden(plan: &LoadedPlan, runs: &[RunSpec]) -> Vec<String> {
    let path = runs
        .iter()
        .find_map(|r| r.settings.checks.as_ref()?.path.as_deref());
    let Some(path) = path else {
        return Vec::new();
    };
    match crate::dataset::golden::golden_set(Some(path), &plan.base_dir, true) {
        Ok(_) => Vec::new(),
        Err(errors) => errors
            .into_iter()
            .map(|e| format!("error: [checks] golden file {e}"))
            .collect(),
    }
}

/// Checks every file the runs' datasets read (each distinct dataset once), printing its
/// warnings to stderr; an error in one fails, with every error said: nothing may be sent.
pub(crate) fn check_files(plan: &LoadedPlan, runs: &[RunSpec]) -> Result<FilesChecked, Failure> {
    let mut seen: Vec<&DatasetPlan> = Vec::new();
    let mut printed: Vec<FileProblem> = Vec::new();
    let mut counts = Vec::new();
    let mut errors = Vec::new();
    for run in runs {
        if seen.contains(&&run.dataset) {
            continue;
        }
        seen.push(&run.dataset);
        let name = &run.settings.dataset.name;
        let checked = check(&run.dataset, &plan.base_dir);
        for (path, n) in checked.files {
            let entry = (name.clone(), path.display().to_string(), n);
            if !counts.contains(&entry) {
                counts.push(entry);
            }
        }
        for p in checked.problems {
            if printed.contains(&p) {
                continue;
            }
            match p.warning {
                true => eprintln!("warning: dataset `{name}`: {p}"),
                false => errors.push(format!("error: dataset `{name}`: {p}")),
            }
            printed.push(p);
        }
    }
    errors.extend(check_golden(plan, runs));
    let tokenizers = TokenizerCache::new();
    errors.extend(check_tokenizers(plan, runs, &tokenizers));
    if !errors.is_empty() {
        let n = errors.len();
        errors.push(format!(
            "{n} error{} in the dataset, golden and tokenizer files: nothing was sent (fix \
             them, or leave the runs that read them out with --only)",
            if n == 1 { "" } else { "s" }
        ));
        return Err(Failure::rendered(exit::INVALID, errors.join("\n")));
    }
    Ok(FilesChecked { counts, tokenizers })
}
