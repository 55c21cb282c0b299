//! The suite's environment in every report's header (`environment::lines`): a short
//! block for the table and Markdown, one object per run in JSON (the client, the
//! labels and the run's own endpoint), a second header line in HTML.

use serde_json::{json, Value};

use super::ReportData;
use crate::environment::{self, Environment};
use crate::store::StoredRun;

/// `environment:` and its lines, indented (empty when the suite recorded none).
pub fn text(data: &ReportData) -> String {
    let Some(env) = &data.suite.info.environment else {
        return String::new();
    };
    let mut out = String::from("environment:\n");
    for line in environment::lines(env) {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The block as a Markdown list.
pub fn markdown(data: &ReportData) -> String {
    let Some(env) = &data.suite.info.environment else {
        return String::new();
    };
    let mut out = String::from("**environment**\n\n");
    for line in environment::lines(env) {
        out.push_str("- ");
        out.push_str(&super::markdown::escape(&line));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The environment a run measured in: the client, the labels and its endpoint's record
/// (`null` for a suite that recorded none).
pub(crate) fn json_of(env: Option<&Environment>, run: &StoredRun) -> Value {
    let Some(env) = env else {
        return Value::Null;
    };
    let name = run
        .settings
        .pointer("/endpoint/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    json!({
        "client": env.client,
        "labels": env.labels,
        "endpoint": env.endpoints.get(name),
    })
}

/// The HTML header's second line: the client, the labels and each endpoint, joined.
pub(crate) fn html_line(data: &ReportData) -> Option<String> {
    let env = data.suite.info.environment.as_ref()?;
    let lines = environment::lines(env);
    (!lines.is_empty()).then(|| lines.join(" · "))
}
