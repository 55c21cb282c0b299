//! The runs' verdicts as every report leads with them: a count line and, for each run
//! that is not valid, its verdict and each reason (what was seen and what to do), before
//! any table; the marks on pivot cells whose metric a weighing reason touches (`✗`
//! invalid, `?` suspect); and `report --accept`, which re-judges the stored verdicts with
//! more reasons accepted. Knows stored runs and verdicts, not how they were judged.

use super::pivot::Labels;
use super::ReportData;
use crate::store::StoredRun;
use crate::trust::{Code, Severity, Status, Verdict};

/// Marks a cell of an invalid run's metric.
pub(crate) const INVALID_MARK: &str = "✗";
/// Marks a cell of a suspect run's metric.
pub(crate) const SUSPECT_MARK: &str = "?";

/// The suite's runs re-judged with `accept` added to each verdict's accepted reasons.
pub fn accept(data: &mut ReportData, accept: &[Code]) {
    for run in &mut data.runs {
        run.verdict = run.verdict.accepting(accept);
    }
}

/// The mark of `metric` on `run`'s cell: a weighing reason of the run that touches it.
pub fn mark(run: &StoredRun, metric: &str) -> Option<&'static str> {
    let touching = run.verdict.touching(metric, Severity::Suspect);
    let worst = touching.iter().map(|r| r.severity).max()?;
    Some(if worst == Severity::Invalid {
        INVALID_MARK
    } else {
        SUSPECT_MARK
    })
}

/// The note under a table with marked cells.
pub(crate) fn mark_note() -> String {
    format!(
        "{INVALID_MARK} invalid, {SUSPECT_MARK} suspect: the run's verdict has a reason that \
         touches this metric (see the verdicts above the table)"
    )
}

/// `8 runs: 6 valid, 1 suspect, 1 invalid` (and `n not judged`, for older runs).
pub(crate) fn count_line(runs: &[StoredRun]) -> String {
    let n = |s: Status| runs.iter().filter(|r| r.verdict.status == s).count();
    let mut parts = Vec::new();
    for s in [
        Status::Valid,
        Status::Suspect,
        Status::Invalid,
        Status::NotJudged,
    ] {
        let k = n(s);
        if k > 0 {
            parts.push(format!("{k} {}", s.as_str().replace('_', " ")));
        }
    }
    format!("verdicts: {}", parts.join(", "))
}

/// One run that is not valid (nor unjudged): its label and verdict, and its reasons.
pub struct Entry {
    pub run: String,
    pub verdict: Verdict,
}

/// Every run whose verdict says something (suspect, invalid, or accepted reasons).
pub fn entries(data: &ReportData) -> Vec<Entry> {
    let labels = Labels::new(&data.runs);
    data.runs
        .iter()
        .filter(|r| !r.verdict.reasons.is_empty())
        .map(|r| Entry {
            run: format!("#{} {} {}", r.ordinal, r.id, labels.run(r))
                .trim_end()
                .to_string(),
            verdict: r.verdict.clone(),
        })
        .collect()
}

/// A reason as one line: `invalid cache_leak: …` (`accepted` when accepted).
pub(crate) fn reason_line(r: &crate::trust::Reason) -> String {
    let weight = if r.accepted {
        "accepted".to_string()
    } else {
        r.severity.as_str().to_string()
    };
    format!("{weight} {}: {}", r.code, r.text)
}

/// The verdicts as the terminal prints them before the table; empty when no run was judged.
pub fn text(data: &ReportData) -> String {
    if data
        .runs
        .iter()
        .all(|r| r.verdict.status == Status::NotJudged)
    {
        return String::new();
    }
    let mut out = count_line(&data.runs);
    out.push('\n');
    for e in entries(data) {
        out.push_str(&format!("{}: {}\n", e.run, e.verdict.summary()));
        for r in &e.verdict.reasons {
            out.push_str(&format!("  {}\n", reason_line(r)));
        }
    }
    out
}

/// The verdicts in Markdown, before the table.
pub fn markdown(data: &ReportData) -> String {
    if data
        .runs
        .iter()
        .all(|r| r.verdict.status == Status::NotJudged)
    {
        return String::new();
    }
    let esc = |t: &str| {
        t.replace('\n', " ")
            .replace('<', "&lt;")
            .replace('|', "\\|")
    };
    let mut out = format!("**{}**\n\n", count_line(&data.runs));
    let entries = entries(data);
    for e in &entries {
        out.push_str(&format!(
            "- **{}**: {}\n",
            esc(&e.run),
            esc(&e.verdict.summary())
        ));
        for r in &e.verdict.reasons {
            out.push_str(&format!("  - {}\n", esc(&reason_line(r))));
        }
    }
    if !entries.is_empty() {
        out.push('\n');
    }
    out
}

/// A run's verdict as JSON: `{"status", "reasons": [{"code", "severity", "accepted", "text"}]}`.
pub fn json(run: &StoredRun) -> serde_json::Value {
    serde_json::to_value(&run.verdict).unwrap_or(serde_json::Value::Null)
}

/// The codes of a run's weighing reasons, `;`-joined (CSV).
pub fn codes(run: &StoredRun) -> String {
    run.verdict
        .weighing()
        .iter()
        .map(|r| r.code.as_str())
        .collect::<Vec<_>>()
        .join(";")
}
