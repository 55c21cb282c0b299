//! The planner: expands a loaded plan's matrix into ordered, fully resolved runs with
//! stable ids, and selects runs with `--only`. Knows nothing about HTTP or storage.

mod locate;
pub mod matrix;
mod request_checks;
mod resolve;
pub mod run;
pub mod search;

pub use resolve::{load_problems, parse_share, warmup_count};
pub use run::{canonical_json, is_secret_header, run_id, Named, RunSettings, RunSpec};

use serde_json::Value;

use crate::plan::diag::Diagnostic;
use crate::plan::LoadedPlan;

/// The runs of a plan, and the warnings found while expanding it.
#[derive(Debug, Clone)]
pub struct Expansion {
    pub runs: Vec<RunSpec>,
    pub warnings: Vec<Diagnostic>,
}

/// Expands the matrix. All problems are returned at once (errors and warnings).
pub fn expand(plan: &LoadedPlan) -> Result<Expansion, Vec<Diagnostic>> {
    let m = &plan.spec.matrix;
    let points = matrix::expand(&m.axes, &m.exclude, &m.include);
    let resolver = resolve::Resolver { plan };
    let mut diags = Vec::new();
    request_checks::check_plan(plan, &mut diags);
    let mut runs: Vec<RunSpec> = Vec::new();
    if points.is_empty() {
        diags.push(Diagnostic::error(
            "the matrix has no runs left (every point was excluded)",
            Some(plan.locate(&[crate::plan::node::Step::Key("matrix".into())])),
        ));
    }
    for point in points {
        let Some(settings) = resolver.resolve(&point, &mut diags) else {
            continue;
        };
        let id = run_id(&settings);
        if runs.iter().any(|r| r.id == id) {
            continue;
        }
        let dataset_seed = run::dataset_seed(&settings);
        runs.push(RunSpec {
            ordinal: runs.len() + 1,
            id,
            axes: point,
            settings,
            dataset_seed,
        });
    }
    dedup_warnings(&mut diags);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    Ok(Expansion {
        runs,
        warnings: diags,
    })
}

fn dedup_warnings(diags: &mut Vec<Diagnostic>) {
    let mut seen: Vec<Diagnostic> = Vec::new();
    diags.retain(|d| {
        if seen.contains(d) {
            false
        } else {
            seen.push(d.clone());
            true
        }
    });
}

/// A value as shown in tables and matched by `--only`.
pub fn display_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map)
            if map.contains_key("concurrency")
                || map.contains_key("rate")
                || map.contains_key("search") =>
        {
            load_label(map)
        }
        Value::Object(map) if map.contains_key("min") && map.contains_key("max") => {
            format!(
                "{}..{}",
                display_value(&map["min"]),
                display_value(&map["max"])
            )
        }
        // Any other table (an `extra` axis value, say) as the report labels it: `key=value …`.
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| format!("{k}={}", display_value(v)))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

fn load_label(map: &serde_json::Map<String, Value>) -> String {
    let mut parts = Vec::new();
    if let Some(var) = map.get("search").and_then(Value::as_str) {
        let bound = |k: &str| {
            map.get(k)
                .and_then(Value::as_f64)
                .map_or("default".to_string(), |v| {
                    if v.fract() == 0.0 {
                        format!("{v:.0}")
                    } else {
                        v.to_string()
                    }
                })
        };
        parts.push(format!("search {var} {}..{}", bound("min"), bound("max")));
    }
    if let Some(c) = map.get("concurrency") {
        parts.push(format!("c={c}"));
    }
    if let Some(r) = map.get("rate") {
        parts.push(format!("rate={r}/s"));
    }
    if let Some(n) = map.get("requests") {
        parts.push(format!("n={n}"));
    }
    if let Some(d) = map.get("duration").and_then(Value::as_str) {
        parts.push(format!("for {d}"));
    }
    parts.join(" ")
}

/// Keeps the runs matching every `key=value` of `--only` (comma-separated, repeatable).
/// Keys are axes, `id`, `ordinal`, or `concurrency`/`rate`/`requests` of the load.
pub fn select(runs: Vec<RunSpec>, only: &[String]) -> Result<Vec<RunSpec>, String> {
    let mut filters = Vec::new();
    for arg in only {
        for part in arg.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("`--only {part}`: write key=value, e.g. --only endpoint=cache-on,cache_state=warm"))?;
            filters.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let known = |k: &str| {
        matches!(k, "id" | "ordinal" | "concurrency" | "rate" | "requests")
            || runs.iter().any(|r| r.axes.contains_key(k))
    };
    if let Some((k, _)) = filters.iter().find(|(k, _)| !known(k)) {
        return Err(format!("`--only`: no run has an axis `{k}`"));
    }
    Ok(runs
        .into_iter()
        .filter(|r| filters.iter().all(|(k, v)| matches(r, k, v)))
        .collect())
}

fn matches(run: &RunSpec, key: &str, want: &str) -> bool {
    let load = serde_json::to_value(&run.settings.load).unwrap_or(Value::Null);
    match key {
        "id" => run.id.starts_with(want),
        "ordinal" => run.ordinal.to_string() == want,
        "concurrency" | "rate" | "requests" if !run.axes.contains_key(key) => {
            load.get(key).is_some_and(|v| display_value(v) == want)
        }
        _ => run.axes.get(key).is_some_and(|v| display_value(v) == want),
    }
}
