//! Repeats in reports: the runs of a `repeat = N` load as one group, each metric's mean
//! over the group's done repeats with a Student t 95% interval (`metrics::student`; a
//! group with one done repeat has a mean and no interval). A run's place in its group is
//! read from its stored settings (`repeat = {group, k, of}`); the group's label is the
//! run's axes without `repeat`. Shown after the pivot in the table, Markdown and HTML;
//! `report --groups` gives the groups alone as JSON or CSV.

use serde_json::{json, Map, Value};

use super::format::{display_for, mean_pm};
use super::grid::{Grid, UNKNOWN};
use super::pivot::Labels;
use crate::metrics::names;
use crate::metrics::student::{mean_interval, MeanInterval};
use crate::store::{RunStatus, StoredRun};

/// The confidence of every repeat interval.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// The axis that numbers repeats.
pub(crate) const REPEAT_AXIS: &str = "repeat";

/// A run's place among its group's repeats, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatOf {
    pub group: String,
    pub k: u32,
    pub of: u32,
}

/// The repeat facts of a stored run, when it is one of a group.
pub(crate) fn repeat_of(run: &StoredRun) -> Option<RepeatOf> {
    let r = run.settings.get("repeat")?;
    let int = |k: &str| r.get(k).and_then(Value::as_u64).map(|v| v as u32);
    Some(RepeatOf {
        group: r.get("group")?.as_str()?.to_string(),
        k: int("k")?,
        of: int("of")?,
    })
}

/// The runs of one group, by ordinal.
#[derive(Debug, Clone, PartialEq)]
pub struct Group<'a> {
    pub id: String,
    pub of: u32,
    pub runs: Vec<&'a StoredRun>,
}

impl Group<'_> {
    /// The values of `metric` over the group's done repeats.
    pub fn values(&self, metric: &str) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.status == RunStatus::Done)
            .filter_map(|r| r.metrics.get(metric).copied().flatten())
            .filter(|v| v.is_finite())
            .collect()
    }

    /// The mean of `metric` and its interval (`None` with one value; no mean with none).
    pub fn stat(&self, metric: &str) -> Option<(f64, Option<MeanInterval>)> {
        let v = self.values(metric);
        if v.is_empty() {
            return None;
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        Some((mean, mean_interval(&v, CONFIDENCE)))
    }

    /// Repeats that finished.
    pub fn done(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| r.status == RunStatus::Done)
            .count()
    }
}

/// The groups of repeated runs, in order of first appearance (runs not repeated are in
/// none).
pub fn groups(runs: &[StoredRun]) -> Vec<Group<'_>> {
    let mut out: Vec<Group> = Vec::new();
    for run in runs {
        let Some(r) = repeat_of(run) else { continue };
        match out.iter_mut().find(|g| g.id == r.group) {
            Some(g) => g.runs.push(run),
            None => out.push(Group {
                id: r.group,
                of: r.of,
                runs: vec![run],
            }),
        }
    }
    out
}

/// The group's label: the first run's varying axes, `repeat` left out.
fn label(labels: &Labels, group: &Group) -> String {
    group
        .runs
        .first()
        .map(|r| labels.run_without(r, &[REPEAT_AXIS]))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| group.id.clone())
}

/// The groups as a grid: one row per group, each metric as `mean ± half-width`.
pub fn grid(runs: &[StoredRun], metrics: &[String]) -> Option<Grid> {
    let groups = groups(runs);
    if groups.is_empty() {
        return None;
    }
    let labels = Labels::new(runs);
    let mut header = vec!["group".to_string(), "repeats".to_string()];
    let mut displays = Vec::new();
    for m in metrics {
        let all: Vec<f64> = groups.iter().flat_map(|g| g.values(m)).collect();
        let d = display_for(m, &all);
        header.push(d.header(m));
        displays.push(d);
    }
    let rows = groups
        .iter()
        .map(|g| {
            let mut row = vec![label(&labels, g), format!("{}/{}", g.done(), g.of)];
            for (m, d) in metrics.iter().zip(&displays) {
                row.push(match g.stat(m) {
                    None => UNKNOWN.into(),
                    Some((mean, None)) => d.value(mean),
                    Some((_, Some(iv))) => mean_pm(d, iv.mean, iv.half_width()),
                });
            }
            row
        })
        .collect();
    Some(Grid {
        header,
        rows,
        label_cols: 2,
        notes: vec![NOTE.into()],
    })
}

/// What the groups' cells mean.
pub(crate) const NOTE: &str = "Repeats: each cell is the mean over the group's done repeats ± the half-width of its Student t 95% confidence interval (n − 1 degrees of freedom); a group with one done repeat shows its value alone.";

/// The groups as JSON: `[{group, axes, of, done, runs: [id], metrics: {name: {mean, low,
/// high, n}|null}}]`, every metric of the vocabulary present (`low`/`high` null for one
/// repeat).
pub fn json(runs: &[StoredRun]) -> Value {
    let groups = groups(runs);
    let out: Vec<Value> = groups
        .iter()
        .map(|g| {
            let metrics: Map<String, Value> = names::all_names()
                .into_iter()
                .map(|m| {
                    let v = match g.stat(&m) {
                        None => Value::Null,
                        Some((mean, iv)) => json!({
                            "mean": mean,
                            "low": iv.map(|i| i.low),
                            "high": iv.map(|i| i.high),
                            "n": g.values(&m).len(),
                        }),
                    };
                    (m, v)
                })
                .collect();
            let mut axes = g.runs.first().map(|r| r.axes.clone()).unwrap_or_default();
            if let Value::Object(map) = &mut axes {
                map.shift_remove(REPEAT_AXIS);
            }
            json!({
                "group": g.id,
                "axes": axes,
                "of": g.of,
                "done": g.done(),
                "runs": g.runs.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
                "metrics": metrics,
            })
        })
        .collect();
    Value::Array(out)
}

/// The groups as CSV: `group`, `of`, `done`, then per metric of the vocabulary
/// `{metric}_mean`, `{metric}_ci_low`, `{metric}_ci_high` (empty when unknown).
pub fn csv(runs: &[StoredRun]) -> String {
    let all = names::all_names();
    let mut header = vec!["group".to_string(), "of".into(), "done".into()];
    for m in &all {
        header.extend([
            format!("{m}_mean"),
            format!("{m}_ci_low"),
            format!("{m}_ci_high"),
        ]);
    }
    let mut out = header.join(",") + "\n";
    for g in groups(runs) {
        let mut row = vec![g.id.clone(), g.of.to_string(), g.done().to_string()];
        for m in &all {
            let (mean, iv) = g.stat(m).map_or((None, None), |(m, iv)| (Some(m), iv));
            let text = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            row.extend([
                text(mean),
                text(iv.map(|i| i.low)),
                text(iv.map(|i| i.high)),
            ]);
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// The runs of `runs` that lead their group (its first stored repeat), and every run not
/// repeated, by ordinal.
pub(crate) fn group_leads(runs: &[StoredRun]) -> Vec<StoredRun> {
    let mut seen: Vec<String> = Vec::new();
    runs.iter()
        .filter(|r| match repeat_of(r) {
            None => true,
            Some(rep) if seen.contains(&rep.group) => false,
            Some(rep) => {
                seen.push(rep.group);
                true
            }
        })
        .cloned()
        .collect()
}

/// The group `lead` leads (`lead` alone when it is not repeated).
pub(crate) fn group_members<'a>(runs: &'a [StoredRun], lead: &StoredRun) -> Group<'a> {
    let Some(rep) = repeat_of(lead) else {
        return Group {
            id: lead.id.clone(),
            of: 1,
            runs: runs.iter().filter(|r| r.id == lead.id).collect(),
        };
    };
    Group {
        runs: runs
            .iter()
            .filter(|r| repeat_of(r).is_some_and(|x| x.group == rep.group))
            .collect(),
        id: rep.group,
        of: rep.of,
    }
}

/// A group's value of `metric` in a comparison: the mean over its done repeats when it has
/// several, else the lead run's own value.
pub(crate) fn group_value(group: &Group, lead: &StoredRun, metric: &str) -> Option<f64> {
    if group.runs.len() > 1 {
        group.stat(metric).map(|(mean, _)| mean)
    } else {
        lead.metrics.get(metric).copied().flatten()
    }
}
