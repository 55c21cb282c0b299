//! The planner: expands a loaded plan's matrix into ordered, fully resolved runs with
//! stable ids, and selects runs with `--only`. Each run is typed here, once: its load
//! (`RunLoad`), its dataset settings per kind (`DatasetPlan`, made by
//! `DatasetPlan::from_spec`, which lives in `plan` so that `dataset` can see it) and its
//! request fields (`RequestPlan`); no stage after it reads the optional keys again.
//! Knows nothing about HTTP or storage.

pub mod cancel;
pub mod concurrency_ramp;
mod entries;
pub mod explore;
mod load;
mod locate;
pub mod matrix;
pub mod mix;
pub mod order;
pub mod ramp;
pub mod repeat;
mod request_checks;
mod resolve;
pub mod run;
mod run_load;
pub mod saturation;
pub mod search;
mod select;

pub use crate::plan::{DatasetPlan, FileSelect, MultiTurn, TracePlan};
pub use crate::request::{OutputLen, RequestPlan};
pub use load::{ArrivalProcess, Load, LoadShare, RunLoad, SearchTerms};
pub use ramp::{RampStep, RateCurve};
pub use resolve::{load_problems, parse_share, warmup_count};
pub use run::{
    canonical_json, hardware_of, is_secret_header, run_id, users_of, Named, RepeatOf, RunSettings,
    RunSpec,
};
pub use select::select;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::plan::diag::Diagnostic;
use crate::plan::matrix::{axis_target, AxisTarget};
use crate::plan::{DatasetKind, LoadedPlan};
use matrix::Point;

/// The runs of a plan, and the warnings found while expanding it.
#[derive(Debug, Clone)]
pub struct Expansion {
    pub runs: Vec<RunSpec>,
    pub warnings: Vec<Diagnostic>,
}

/// Expands the matrix. All problems are returned at once (errors and warnings).
pub fn expand(plan: &LoadedPlan) -> Result<Expansion, Vec<Diagnostic>> {
    expand_checked(plan, true)
}

/// `expand` of a plan that did not load, its faulty values left out
/// (`plan::load_plan_partial`): every check but those of `exclude` entries against the
/// matrix's points, which are not the points written once values are left out.
pub(crate) fn expand_partial(plan: &LoadedPlan) -> Result<Expansion, Vec<Diagnostic>> {
    expand_checked(plan, false)
}

fn expand_checked(plan: &LoadedPlan, excludes: bool) -> Result<Expansion, Vec<Diagnostic>> {
    let m = &plan.spec.matrix;
    let points = matrix::expand(&m.axes, &m.exclude, &m.include);
    let resolver = resolve::Resolver { plan };
    let mut diags = Vec::new();
    request_checks::check_plan(plan, &mut diags);
    if excludes {
        entries::check_excludes(plan, &mut diags);
    }
    if points.is_empty() && excludes {
        diags.push(Diagnostic::error(
            "the matrix has no runs left (every point was excluded)",
            Some(plan.locate(&[crate::plan::node::Step::Key("matrix".into())])),
        ));
    }
    let mut runs = Runs::default();
    for point in points {
        let mut dropped = Vec::new();
        if let Some(resolved) = resolver.resolve(&point, &mut dropped, &mut diags) {
            runs.add(plan, point, resolved, &dropped);
        }
    }
    runs.repeats.report(&mut diags);
    for (key, datasets) in &runs.misfits {
        if !runs.applied.contains(key) {
            diags.push(entries::fits_no_dataset(plan, key, datasets));
        }
    }
    dedup_warnings(&mut diags);
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    Ok(Expansion {
        runs: runs.runs,
        warnings: diags,
    })
}

/// The runs of an expansion as they are found, with what the checks across runs need.
#[derive(Default)]
struct Runs {
    runs: Vec<RunSpec>,
    /// Each run's point as the matrix gave it (before keys that do not apply were dropped).
    written: Vec<Point>,
    /// Dataset keys left out of some run, with the datasets they did not fit.
    misfits: BTreeMap<String, Vec<(String, DatasetKind)>>,
    /// Dataset keys that applied to at least one run.
    applied: BTreeSet<String>,
    /// Points that were a run already.
    repeats: entries::Repeats,
}

impl Runs {
    fn add(
        &mut self,
        plan: &LoadedPlan,
        point: Point,
        (mut settings, typed): (RunSettings, DatasetPlan),
        dropped: &[String],
    ) {
        // `repeat` is not part of the group's id: it says how many runs the group has.
        let of = settings.load.repeat.take().unwrap_or(1);
        let dataset = (settings.dataset.name.clone(), settings.dataset.spec.kind);
        for key in point.keys() {
            if dropped.contains(key) {
                let misfit = self.misfits.entry(key.clone()).or_default();
                if !misfit.contains(&dataset) {
                    misfit.push(dataset.clone());
                }
            } else if axis_target(key) == Some(AxisTarget::Dataset) {
                self.applied.insert(key.clone());
            }
        }
        let mut axes = point.clone();
        for key in dropped {
            axes.shift_remove(key);
        }
        repeat::strip_axis(&mut axes);
        let id = run_id(&settings);
        if let Some(i) = self.runs.iter().position(|r| repeat::group_of(r) == id) {
            // Points that differ only by a key their dataset does not take are one run.
            let mut first = self.runs[i].axes.clone();
            first.shift_remove(repeat::REPEAT_AXIS);
            if self.written[i] != point && first == axes {
                return;
            }
            self.repeats
                .add(plan, &self.runs[i], &self.written[i], &point);
            return;
        }
        let dataset_seed = run::dataset_seed(&settings);
        let request = run::request_plan(&settings);
        let load = RunLoad::of(&settings.load, settings.dataset.spec.kind, settings.seed);
        let group = RunSpec {
            ordinal: 0,
            id,
            axes,
            settings,
            dataset_seed,
            dataset: typed,
            request,
            load,
        };
        for run in repeat::repeats(group, of, self.runs.len() + 1) {
            self.runs.push(run);
            self.written.push(point.clone());
        }
    }
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
pub(crate) fn display_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map)
            if map.contains_key("concurrency")
                || map.contains_key("rate")
                || map.contains_key("search")
                || map.contains_key("ramp")
                || map.contains_key("concurrency_ramp")
                || map.contains_key("explore") =>
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
    if let Some(ramp) = map.get("ramp").and_then(Value::as_object) {
        parts.push(ramp_label(ramp, "rates", "/s"));
    }
    if let Some(ramp) = map.get("concurrency_ramp").and_then(Value::as_object) {
        parts.push(ramp_label(ramp, "concurrencies", ""));
    }
    if let Some(explore) = map.get("explore").and_then(Value::as_object) {
        parts.push(explore_label(explore));
    }
    if let Some(n) = map.get("requests") {
        parts.push(format!("n={n}"));
    }
    if let Some(d) = map.get("duration").and_then(Value::as_str) {
        parts.push(format!("for {d}"));
    }
    if let Some(cancel) = map.get("cancel").and_then(Value::as_object) {
        parts.push(cancel_label(cancel));
    }
    parts.join(" ")
}

/// A load's `cancel` as `expand` shows it: `cancel 10% at 500ms` (or `at 200ms..2s`).
fn cancel_label(cancel: &serde_json::Map<String, Value>) -> String {
    let share = cancel
        .get("share")
        .and_then(Value::as_f64)
        .map_or("?".to_string(), |s| {
            format!("{}%", (s * 1e4).round() / 100.0)
        });
    let after = match cancel.get("after") {
        Some(Value::Object(range)) => {
            let end = |k: &str| range.get(k).map_or("?".to_string(), display_value);
            format!("{}..{}", end("min"), end("max"))
        }
        Some(v) => display_value(v),
        None => "?".to_string(),
    };
    format!("cancel {share} at {after}")
}

/// An exploring load as `expand` shows it: `explore c=1..1024 x2 step 30s` (by rate:
/// `explore rate=1..1024/s x2 step 200 requests`).
fn explore_label(explore: &serde_json::Map<String, Value>) -> String {
    let key = |k: &str, default: &str| explore.get(k).map_or(default.to_string(), display_value);
    let (what, unit) = match explore.get("by").and_then(Value::as_str) {
        Some("rate") => ("rate", "/s"),
        _ => ("c", ""),
    };
    let step = match explore.get("step") {
        Some(n @ Value::Number(_)) => format!("{n} requests"),
        _ => key("step", "?"),
    };
    format!(
        "explore {what}={}..{}{unit} x{} step {step}",
        key("from", "1"),
        key("max", "1024"),
        key("growth", "2"),
    )
}

/// A ramp as `expand` shows it: `ramp 1..64/s linear over 60s` or `rates 5,20,60/s step 1s`
/// (a concurrency ramp: `c=1..64 step over 60s steps=4` or `c=1,4,16 step 10s`).
fn ramp_label(ramp: &serde_json::Map<String, Value>, series: &str, unit: &str) -> String {
    let num = |v: &Value| match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        _ => display_value(v),
    };
    let text = |k: &str| ramp.get(k).map(num).unwrap_or_default();
    if let Some(rates) = ramp.get(series).and_then(Value::as_array) {
        let list: Vec<String> = rates.iter().map(num).collect();
        let head = if series == "rates" { "rates " } else { "c=" };
        return format!("{head}{}{unit} step {}", list.join(","), text("step"));
    }
    let shape = ramp.get("shape").map_or("linear".into(), display_value);
    let steps = ramp
        .get("steps")
        .map_or(String::new(), |n| format!(" steps={}", display_value(n)));
    let head = if series == "rates" { "ramp " } else { "c=" };
    format!(
        "{head}{}..{}{unit} {shape} over {}{steps}",
        text("from"),
        text("to"),
        text("over")
    )
}
