//! Gate verdicts as JUnit XML, in the shape Jenkins, GitLab and GitHub's test reporters
//! read (Ant's JUnit schema): one `<testsuites>`, a `<testsuite>` per run, a
//! `<testcase>` per gate on that run, and a `<failure>` naming metric, value and
//! condition when the gate failed. Counts in every element agree with its children.

use std::collections::BTreeMap;

use super::gates::GateOutcome;

/// XML text with the five special characters escaped (for attributes and text).
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 allows no other control characters.
            c if c.is_control() && !matches!(c, '\n' | '\t' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// What the XML says about the suite besides its verdicts.
#[derive(Debug, Clone, Default)]
pub struct JunitContext {
    /// The plan's name (the suites' package).
    pub plan: String,
    /// Where the verdicts come from: `run`, `report`, `compare`.
    pub source: String,
    /// RFC 3339 time of the verdicts.
    pub timestamp: String,
    pub hostname: String,
    /// Each run's measured duration in seconds, by run id.
    pub durations: BTreeMap<String, f64>,
}

/// The JUnit XML of the verdicts.
pub fn render(outcomes: &[GateOutcome], ctx: &JunitContext) -> String {
    let mut runs: Vec<(&str, Vec<&GateOutcome>)> = Vec::new();
    for o in outcomes {
        match runs.iter_mut().find(|(id, _)| *id == o.run_id) {
            Some((_, list)) => list.push(o),
            None => runs.push((&o.run_id, vec![o])),
        }
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let total_time: f64 = runs
        .iter()
        .map(|(id, _)| ctx.durations.get(*id).copied().unwrap_or(0.0))
        .sum();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" time=\"{total_time:.3}\">\n",
        esc(&format!("perfplan {} gates: {}", ctx.source, ctx.plan)),
        outcomes.len(),
    );
    for (i, (id, list)) in runs.iter().enumerate() {
        let suite_failed = list.iter().filter(|o| !o.passed).count();
        let label = list.first().map_or("", |o| o.run_label.as_str());
        let time = ctx.durations.get(*id).copied().unwrap_or(0.0);
        out.push_str(&format!(
            "  <testsuite name=\"{}\" id=\"{i}\" package=\"{}\" tests=\"{}\" failures=\"{suite_failed}\" errors=\"0\" skipped=\"0\" time=\"{time:.3}\" timestamp=\"{}\" hostname=\"{}\">\n",
            esc(&format!("{label} ({id})")),
            esc(&ctx.plan),
            list.len(),
            esc(&ctx.timestamp),
            esc(&ctx.hostname),
        ));
        for o in list {
            let name = format!("{} {}", o.condition.metric, o.condition.text);
            out.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{}\" time=\"0\"",
                esc(&name),
                esc(&format!("perfplan.{}.{id}", ctx.plan)),
            ));
            if o.passed {
                out.push_str(" />\n");
            } else {
                out.push_str(&format!(
                    ">\n      <failure message=\"{}\" type=\"gate\">{}: {}</failure>\n    </testcase>\n",
                    esc(&o.message),
                    esc(&o.run_label),
                    esc(&o.message),
                ));
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
