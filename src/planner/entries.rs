//! Checks of what a matrix expands to, located in the plan: an `exclude` key that is not
//! an axis of the matrix, an `exclude` entry that drops nothing, a dataset axis that
//! fits none of its runs' datasets, and two points that are the same run. Pure: the
//! loaded plan and the expanded points in, diagnostics out.

use super::matrix::{unmatched_excludes, Point};
use super::{display_value, RunSpec};
use crate::plan::diag::{suggest, Diagnostic, Span};
use crate::plan::node::Step;
use crate::plan::{DatasetKind, LoadedPlan};

fn at(plan: &LoadedPlan, steps: &[Step]) -> Span {
    let mut path = vec![Step::Key("matrix".into())];
    path.extend_from_slice(steps);
    plan.locate(&path)
}

/// `key=value, …` of a point, as tables and `--only` show values.
pub(crate) fn point_text(point: &Point) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={}", display_value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the axis `key` was given (or replaced) by `--set`.
fn set_on_command_line(plan: &LoadedPlan, key: &str) -> bool {
    let span = plan
        .tree
        .get("matrix")
        .and_then(|m| m.get(key))
        .map(|n| n.span);
    span.and_then(|s| plan.report.sources.files.get(s.file))
        .is_some_and(|f| f.name == "--set")
}

/// Exclude keys that are not axes, and entries that drop no point.
pub(crate) fn check_excludes(plan: &LoadedPlan, diags: &mut Vec<Diagnostic>) {
    let m = &plan.spec.matrix;
    let axes: Vec<&str> = m.axes.iter().map(|(k, _)| k.as_str()).collect();
    let mut with_stray_key = Vec::new();
    for (i, entry) in m.exclude.iter().enumerate() {
        for key in entry.keys().filter(|k| !axes.contains(&k.as_str())) {
            let place = [
                Step::Key("exclude".into()),
                Step::Index(i),
                Step::Key(key.clone()),
            ];
            let help = match suggest(key, axes.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None => format!("the axes of this matrix are: {}", axes.join(", ")),
            };
            diags.push(
                Diagnostic::error(
                    format!("`{key}` in `matrix.exclude[{i}]` is not an axis of this matrix, so the entry would drop nothing"),
                    Some(at(plan, &place)),
                )
                .with_label("not an axis")
                .with_help(help),
            );
            with_stray_key.push(i);
        }
    }
    for i in unmatched_excludes(&m.axes, &m.exclude) {
        if with_stray_key.contains(&i) {
            continue;
        }
        let entry = &m.exclude[i];
        let values: Vec<String> = entry
            .keys()
            .filter_map(|k| {
                let (_, vals) = m.axes.iter().find(|(a, _)| a == k)?;
                let list: Vec<String> = vals.iter().map(display_value).collect();
                Some(format!("`{k}` takes {}", list.join(", ")))
            })
            .collect();
        let message = format!(
            "`matrix.exclude[{i}]` drops no run: no point of the matrix has {}",
            point_text(entry)
        );
        let span = Some(at(plan, &[Step::Key("exclude".into()), Step::Index(i)]));
        let d = if entry.keys().any(|k| set_on_command_line(plan, k)) {
            Diagnostic::warning(message, span)
        } else {
            Diagnostic::error(message, span)
        };
        diags.push(d.with_help(values.join("; ")));
    }
}

/// A dataset axis (or include key) that applied to none of the runs it was given to.
pub(crate) fn fits_no_dataset(
    plan: &LoadedPlan,
    key: &str,
    datasets: &[(String, DatasetKind)],
) -> Diagnostic {
    let list: Vec<String> = datasets
        .iter()
        .map(|(name, kind)| {
            format!(
                "`{name}` is `{}` (it takes {})",
                crate::dataset::kind_name(*kind),
                crate::plan::dataset_keys::keys_for(*kind).join(", ")
            )
        })
        .collect();
    let span = match plan.spec.matrix.axes.iter().any(|(k, _)| k == key) {
        true => at(plan, &[Step::Key(key.into())]),
        false => include_key_span(plan, key),
    };
    Diagnostic::error(
        format!(
            "`{key}` applies to none of the datasets of its runs: {}",
            list.join("; ")
        ),
        Some(span),
    )
    .with_label("fits no dataset")
}

fn include_key_span(plan: &LoadedPlan, key: &str) -> Span {
    let i = plan
        .spec
        .matrix
        .include
        .iter()
        .position(|e| e.contains_key(key))
        .unwrap_or(0);
    at(
        plan,
        &[
            Step::Key("include".into()),
            Step::Index(i),
            Step::Key(key.into()),
        ],
    )
}

/// Points that resolved to a run already made, grouped by the value that repeats it.
#[derive(Default)]
pub(crate) struct Repeats {
    /// (cause, where, first example, how many runs)
    found: Vec<(String, Span, String, usize)>,
}

impl Repeats {
    /// `point` resolved to the run `first` (made from `first_point`).
    pub(crate) fn add(
        &mut self,
        plan: &LoadedPlan,
        first: &RunSpec,
        first_point: &Point,
        point: &Point,
    ) {
        let differing = point.iter().find(|(k, v)| first_point.get(*k) != Some(*v));
        let repeated = || {
            point
                .iter()
                .find_map(|(k, v)| super::locate::second_span(plan, k, v).map(|s| (k, v, s)))
        };
        let (cause, span, example) = match (differing, repeated()) {
            (Some((k, v)), _) => {
                let before = first_point.get(k).map_or("—".into(), display_value);
                (
                    format!(
                        "`{k}` = {before} and `{k}` = {} make the same run",
                        display_value(v)
                    ),
                    super::locate::value_span(plan, k, v),
                    format!(
                        "run {} (`{}`) is both {} and {}",
                        first.ordinal,
                        first.id,
                        point_text(first_point),
                        point_text(point)
                    ),
                )
            }
            (None, Some((k, v, s))) => (
                format!("`{k}` lists {} twice", display_value(v)),
                s,
                format!(
                    "run {} (`{}`): {}",
                    first.ordinal,
                    first.id,
                    point_text(point)
                ),
            ),
            (None, None) => (
                "two matrix points make the same run".to_string(),
                at(plan, &[]),
                format!(
                    "run {} (`{}`): {}",
                    first.ordinal,
                    first.id,
                    point_text(point)
                ),
            ),
        };
        match self
            .found
            .iter_mut()
            .find(|(c, s, _, _)| *c == cause && *s == span)
        {
            Some(entry) => entry.3 += 1,
            None => self.found.push((cause, span, example, 1)),
        }
    }

    /// One error per repeating value, naming the first pair of points it makes one run.
    pub(crate) fn report(&self, diags: &mut Vec<Diagnostic>) {
        for (cause, span, example, count) in &self.found {
            let runs = match count {
                1 => "a run would run twice".to_string(),
                n => format!("{n} runs would each run twice"),
            };
            diags.push(
                Diagnostic::error(format!("{cause}: {runs}; {example}"), Some(*span))
                    .with_label("the same run again")
                    .with_help(
                        "keep one of them (repeating a run on purpose is not supported yet)",
                    ),
            );
        }
    }
}
