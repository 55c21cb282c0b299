//! The files of a plan's runs checked before any request (`run`, and `validate` unless
//! `--no-files`): every dataset file each run reads, through `dataset::check`, each
//! problem printed located (file and line) with the dataset it belongs to, all at once.

use crate::dataset::check::{check, FileProblem};
use crate::plan::{DatasetPlan, LoadedPlan};
use crate::planner::RunSpec;

/// What the check of a plan's files found: each dataset file with its usable entries.
pub struct FilesChecked {
    pub ok: bool,
    pub counts: Vec<(String, String, usize)>,
}

/// Checks every file the runs' datasets read (each distinct dataset once) and prints its
/// problems to stderr. `ok` is false when one is an error: nothing may be sent.
pub fn check_files(plan: &LoadedPlan, runs: &[RunSpec]) -> FilesChecked {
    let mut seen: Vec<&DatasetPlan> = Vec::new();
    let mut printed: Vec<FileProblem> = Vec::new();
    let mut counts = Vec::new();
    let mut errors = 0;
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
            let kind = if p.warning { "warning" } else { "error" };
            eprintln!("{kind}: dataset `{name}`: {p}");
            errors += usize::from(!p.warning);
            printed.push(p);
        }
    }
    if errors > 0 {
        eprintln!(
            "{errors} error{} in the dataset files: nothing was sent (fix them, or leave the \
             runs that read them out with --only)",
            if errors == 1 { "" } else { "s" }
        );
    }
    FilesChecked {
        ok: errors == 0,
        counts,
    }
}
