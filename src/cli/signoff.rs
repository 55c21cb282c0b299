//! Sign-off where CI looks: `--junit FILE` writes the gate verdicts as JUnit XML, and
//! with `$GITHUB_STEP_SUMMARY` set the Markdown report is appended to the job summary.
//! Shared by `run` (and `merge`, `rerun` through `after_run`), `report` and `compare`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::report::gates::GateOutcome;
use crate::report::junit::{self, JunitContext};
use crate::report::ReportError;
use crate::store::Store;

/// Where the verdicts go besides the terminal.
#[derive(Debug, Clone, Default)]
pub(crate) struct SignOff {
    /// `--junit FILE`.
    pub junit: Option<PathBuf>,
}

/// Now as RFC 3339 UTC (`2026-11-29T08:56:05Z`), by the one calendar rule (`units::utc`).
fn now_rfc3339() -> String {
    crate::units::UtcTime::of_unix_ms(crate::store::now_unix_ms()).rfc3339()
}

impl SignOff {
    /// Writes the JUnit file (when asked) for the verdicts on `store`'s suite.
    pub(crate) fn write_junit(
        &self,
        store: &Store,
        source: &str,
        verdicts: &[GateOutcome],
    ) -> Result<(), ReportError> {
        let Some(path) = &self.junit else {
            return Ok(());
        };
        let suite = store.suite()?;
        let durations = store
            .runs()?
            .into_iter()
            .filter_map(|r| {
                r.metrics
                    .get("duration_s")
                    .copied()
                    .flatten()
                    .map(|d| (r.id, d))
            })
            .collect();
        let ctx = JunitContext {
            plan: suite.info.plan_name.clone(),
            source: source.to_string(),
            timestamp: now_rfc3339(),
            hostname: suite.info.host.hostname.clone(),
            durations,
        };
        let xml = junit::render(verdicts, &ctx);
        std::fs::write(path, xml).map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
        if verdicts.is_empty() {
            eprintln!(
                "wrote {} (no gates: the plan has no [gates] and no --gate was given)",
                path.display()
            );
        } else {
            eprintln!("wrote {}", path.display());
        }
        Ok(())
    }
}

/// Appends `markdown` to `$GITHUB_STEP_SUMMARY` when it is set; a summary that cannot be
/// written is a warning, never a failed command.
pub(crate) fn step_summary(markdown: impl FnOnce() -> Result<String, ReportError>) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let path = Path::new(&path);
    let text = match markdown() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("warning: no job summary: {}", crate::control::chain(&e));
            return;
        }
    };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{text}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "warning: cannot append the report to $GITHUB_STEP_SUMMARY ({}): {e}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = super::now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(
            t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T',
            "{t}"
        );
    }
}
