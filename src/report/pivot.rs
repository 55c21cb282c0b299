//! The pivot: which run sits in which cell when rows and columns are axis values.
//! Missing combinations stay empty (`None`), never zero.

use std::collections::HashMap;

use serde_json::Value;

use super::{unknown_metric, ReportError, DEFAULT_METRICS};
use crate::metrics::names;
use crate::metrics::presets::Preset;
use crate::store::StoredRun;

/// What goes where: axes for rows, axes for columns, metrics in every cell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    pub rows: Vec<String>,
    pub columns: Vec<String>,
    pub metrics: Vec<String>,
    /// A report preset (`evalscope`): the text formats print its view instead of the
    /// pivot, and `metrics` are its names where a format has metric columns.
    pub preset: Option<Preset>,
    /// The clock of the answer times (`[report] clock`, `--clock`; `None`: the kernel's).
    pub clock: Option<crate::record::Clock>,
}

impl Layout {
    /// A layout from the command line's `--rows`, `--columns` and `--metrics`; a
    /// `--metrics` of one preset's name (`evalscope`) chooses that preset.
    pub fn from_args(rows: &[String], columns: &[String], metrics: &[String]) -> Layout {
        let preset = match metrics {
            [one] => Preset::parse(one),
            _ => None,
        };
        Layout {
            rows: rows.to_vec(),
            columns: columns.to_vec(),
            metrics: match preset {
                Some(_) => Vec::new(),
                None => metrics.to_vec(),
            },
            preset,
            clock: None,
        }
    }

    /// This layout with the non-empty parts of `over` taking precedence.
    pub(crate) fn overridden_by(mut self, over: &Layout) -> Layout {
        if !over.rows.is_empty() || !over.columns.is_empty() {
            self.rows = over.rows.clone();
            self.columns = over.columns.clone();
        }
        if !over.metrics.is_empty() || over.preset.is_some() {
            self.metrics = over.metrics.clone();
            self.preset = over.preset;
        }
        self.clock = over.clock.or(self.clock);
        self
    }

    /// Checks names against the runs and fills the gaps: default metrics, and every
    /// axis that varies but is placed nowhere is appended to the rows (so no two runs
    /// share a cell).
    pub fn resolve(&self, runs: &[StoredRun]) -> Result<Layout, ReportError> {
        let known = axis_names(runs);
        for name in self.rows.iter().chain(&self.columns) {
            if !known.contains(name) {
                return Err(ReportError::UnknownAxis {
                    name: name.clone(),
                    known: known.clone(),
                });
            }
        }
        let mut metrics = self.metrics.clone();
        if let (Some(preset), true) = (self.preset, metrics.is_empty()) {
            metrics = preset.metrics().iter().map(|m| m.to_string()).collect();
        }
        if metrics.is_empty() {
            metrics = DEFAULT_METRICS.iter().map(|s| s.to_string()).collect();
            lead_with_search_results(&mut metrics, runs);
        }
        if let Some(bad) = metrics.iter().find(|m| !names::is_metric_or_class(m)) {
            return Err(unknown_metric(bad));
        }
        let mut rows = self.rows.clone();
        for axis in varying_axes(runs) {
            if !rows.contains(&axis) && !self.columns.contains(&axis) {
                rows.push(axis);
            }
        }
        Ok(Layout {
            rows,
            columns: self.columns.clone(),
            metrics,
            preset: self.preset,
            clock: self.clock,
        })
    }
}

/// Puts an SLA search's result first among default metrics when some run has one, and
/// an exploring load's knee and saturation point (the level's two and their output
/// tok/s, when some run has a knee: by concurrency, by rate, or both).
pub(crate) fn lead_with_search_results(metrics: &mut Vec<String>, runs: &[StoredRun]) {
    let has = |name: &str| {
        runs.iter()
            .any(|r| r.metrics.get(name).copied().flatten().is_some())
    };
    let (by_users, by_rate) = (has("knee_concurrency"), has("knee_rps"));
    for name in crate::metrics::explore::EXPLORE_NAMES.iter().rev() {
        let wanted = if name.ends_with("_rps") {
            by_rate
        } else if name.ends_with("_concurrency") {
            by_users
        } else {
            by_users || by_rate
        };
        if wanted && !metrics.iter().any(|m| m == name) {
            metrics.insert(0, name.to_string());
        }
    }
    for name in [
        "sla_best_rate",
        "sla_best_concurrency",
        "sla_max_rate",
        "sla_max_concurrency",
    ] {
        let found = runs
            .iter()
            .any(|r| r.metrics.get(name).copied().flatten().is_some());
        if found && !metrics.iter().any(|m| m == name) {
            metrics.insert(0, name.to_string());
        }
    }
}

/// Every axis name of the runs, in order of first appearance.
pub(crate) fn axis_names(runs: &[StoredRun]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for run in runs {
        if let Value::Object(map) = &run.axes {
            for key in map.keys() {
                if !out.contains(key) {
                    out.push(key.clone());
                }
            }
        }
    }
    out
}

/// Axes with more than one value among the runs.
pub(crate) fn varying_axes(runs: &[StoredRun]) -> Vec<String> {
    axis_names(runs)
        .into_iter()
        .filter(|axis| {
            let first = axis_label(runs.first().and_then(|r| r.axes.get(axis)));
            runs.iter().any(|r| axis_label(r.axes.get(axis)) != first)
        })
        .collect()
}

/// A person's label for an axis value: strings as they are, tables as `key=value …`.
pub(crate) fn axis_label(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "—".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| key_label(k, Some(v)))
            .collect::<Vec<_>>()
            .join(" "),
        Some(other) => other.to_string(),
    }
}

/// One key of a table-valued axis: `key=value`, but a load's ramp as `expand` prints it
/// and `--only` matches it (`ramp 1..64/s linear over 60s`, `c=1,4,16 step 10s`: the
/// planner's one rule), not as its table.
fn key_label(key: &str, value: Option<&Value>) -> String {
    match (key, value) {
        (key @ ("ramp" | "concurrency_ramp" | "explore"), Some(ramp)) => {
            crate::planner::display_value(&serde_json::json!({ key: ramp }))
        }
        _ => format!("{key}={}", axis_label(value)),
    }
}

/// Short labels: a table-valued axis (such as `load`) shows only the keys that vary
/// among the runs (`concurrency=4` rather than `concurrency=4 requests=128 warmup=8`),
/// and a whole run shows only the axes that vary.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Labels {
    varying_keys: HashMap<String, Vec<String>>,
    varying_axes: Vec<String>,
}

impl Labels {
    pub fn new(runs: &[StoredRun]) -> Labels {
        let mut varying_keys = HashMap::new();
        for axis in axis_names(runs) {
            let mut keys: Vec<String> = Vec::new();
            for run in runs {
                if let Some(Value::Object(map)) = run.axes.get(&axis) {
                    keys.extend(
                        map.keys()
                            .filter(|k| !keys.contains(k))
                            .cloned()
                            .collect::<Vec<_>>(),
                    );
                }
            }
            let sub = |run: &StoredRun, key: &str| {
                axis_label(run.axes.get(&axis).and_then(|v| v.get(key)))
            };
            keys.retain(|k| {
                runs.iter()
                    .any(|r| runs.first().is_some_and(|f| sub(r, k) != sub(f, k)))
            });
            // One key that tells every value apart is label enough (`concurrency=8`
            // rather than `concurrency=8 requests=256 warmup=8`).
            let whole = |r: &StoredRun| axis_label(r.axes.get(&axis));
            // ... when every run has it: `concurrency=4` beside `rate=5` is no label for
            // the second; those keep every varying key, each run showing the ones it has.
            let distinct = |k: &String| {
                runs.iter().all(|a| {
                    a.axes.get(&axis).and_then(|v| v.get(k)).is_some()
                        && runs
                            .iter()
                            .all(|b| sub(a, k) != sub(b, k) || whole(a) == whole(b))
                })
            };
            keys.sort_by_key(|k| {
                !matches!(
                    k.as_str(),
                    "concurrency" | "rate" | "ramp" | "concurrency_ramp" | "explore" | "search"
                )
            });
            if let Some(k) = keys.iter().find(|k| distinct(k)).cloned() {
                keys = vec![k];
            }
            varying_keys.insert(axis, keys);
        }
        Labels {
            varying_keys,
            varying_axes: varying_axes(runs),
        }
    }

    /// The label of one axis value. A load's ramp reads as `expand` shows it and
    /// `--only` matches it (`ramp 1..64/s linear over 60s`, `rates 5,20/s step 1s`: the
    /// planner's one rule), not as its table (`ramp=from=1 to=64 over=60s`).
    pub fn value(&self, axis: &str, value: Option<&Value>) -> String {
        match (value, self.varying_keys.get(axis)) {
            (Some(Value::Object(map)), Some(keys)) if !keys.is_empty() => {
                // The varying keys this value has (all of them, `—` each, when it has none).
                let own: Vec<&String> = keys.iter().filter(|k| map.contains_key(*k)).collect();
                let shown = if own.is_empty() {
                    keys.iter().collect()
                } else {
                    own
                };
                shown
                    .iter()
                    .map(|k| key_label(k, map.get(*k)))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            _ => axis_label(value),
        }
    }

    /// Labels of `axes` for one run.
    pub fn key(&self, run: &StoredRun, axes: &[String]) -> Vec<String> {
        axes.iter()
            .map(|a| self.value(a, run.axes.get(a)))
            .collect()
    }

    /// A run as `axis=value …` over the axes that vary (all of them when none does).
    pub fn run(&self, run: &StoredRun) -> String {
        self.run_without(run, &[])
    }

    /// `run`'s label without the axes in `skip`.
    pub(crate) fn run_without(&self, run: &StoredRun, skip: &[&str]) -> String {
        let axes: Vec<String> = match &run.axes {
            Value::Object(map) if self.varying_axes.is_empty() => map.keys().cloned().collect(),
            _ => self.varying_axes.clone(),
        };
        axes.iter()
            .filter(|a| !skip.contains(&a.as_str()))
            .map(|a| format!("{a}={}", self.value(a, run.axes.get(a))))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The axes that vary among the runs, in order of first appearance.
    pub(crate) fn varying(&self) -> &[String] {
        &self.varying_axes
    }

    /// `run` as the values of its varying axes other than `skip`, joined by ` · `
    /// (`sim-cache-on · cold · concurrency=8`): a legend entry, whose axis names the
    /// chart's caption gives once.
    pub fn short(&self, run: &StoredRun, skip: &[&str]) -> String {
        let parts: Vec<String> = self
            .varying_axes
            .iter()
            .filter(|a| !skip.contains(&a.as_str()))
            .map(|a| self.value(a, run.axes.get(a)))
            .collect();
        if parts.is_empty() {
            "all runs".into()
        } else {
            parts.join(" · ")
        }
    }
}

/// Runs placed in a grid of row keys × column keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Pivot {
    pub layout: Layout,
    /// Axis labels of each row, in order of first appearance (by ordinal).
    pub row_keys: Vec<Vec<String>>,
    pub col_keys: Vec<Vec<String>>,
    /// `cells[row][col]`: index of the run in the input, `None` for a missing combination.
    pub cells: Vec<Vec<Option<usize>>>,
}

impl Pivot {
    /// Places `runs` by a resolved layout (see `Layout::resolve`).
    pub fn build(runs: &[StoredRun], layout: Layout) -> Pivot {
        let mut row_keys: Vec<Vec<String>> = Vec::new();
        let mut col_keys: Vec<Vec<String>> = Vec::new();
        let mut at: HashMap<(usize, usize), usize> = HashMap::new();
        let labels = Labels::new(runs);
        for (i, run) in runs.iter().enumerate() {
            let r = position(&mut row_keys, labels.key(run, &layout.rows));
            let c = position(&mut col_keys, labels.key(run, &layout.columns));
            at.entry((r, c)).or_insert(i);
        }
        let cells = (0..row_keys.len())
            .map(|r| {
                (0..col_keys.len())
                    .map(|c| at.get(&(r, c)).copied())
                    .collect()
            })
            .collect();
        Pivot {
            layout,
            row_keys,
            col_keys,
            cells,
        }
    }
}

fn position(keys: &mut Vec<Vec<String>>, key: Vec<String>) -> usize {
    if let Some(i) = keys.iter().position(|k| *k == key) {
        return i;
    }
    keys.push(key);
    keys.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunStatus;
    use serde_json::json;

    fn run(i: u32, axes: Value) -> StoredRun {
        StoredRun {
            id: format!("r{i}"),
            ordinal: i,
            axes,
            settings: json!({}),
            status: RunStatus::Done,
            started_unix_ms: None,
            finished_unix_ms: None,
            warnings: vec![],
            facts: crate::record::RunFacts::default(),
            error: None,
            metrics: Default::default(),
            verdict: Default::default(),
        }
    }

    #[test]
    fn a_ramp_reads_as_expand_shows_it() {
        let ramp = json!({"ramp": {"from": 5, "to": 60, "over": "2s", "shape": "exponential",
            "steps": 4}, "requests": 100});
        let rates = json!({"ramp": {"rates": [5, 15, 30], "step": "500ms"}, "requests": 100});
        let runs = vec![
            run(0, json!({ "load": ramp })),
            run(1, json!({ "load": rates })),
        ];
        let labels = Labels::new(&runs);
        assert_eq!(
            labels.run(&runs[0]),
            "load=ramp 5..60/s exponential over 2s steps=4"
        );
        assert_eq!(labels.short(&runs[1], &[]), "rates 5,15,30/s step 500ms");
    }

    #[test]
    fn pivot_leaves_missing_cells_empty() {
        let runs = vec![
            run(
                0,
                json!({"endpoint": "on", "cache_state": "cold", "load": {"concurrency": 1}}),
            ),
            run(
                1,
                json!({"endpoint": "on", "cache_state": "warm", "load": {"concurrency": 1}}),
            ),
            run(
                2,
                json!({"endpoint": "off", "cache_state": "cold", "load": {"concurrency": 1}}),
            ),
            run(
                3,
                json!({"endpoint": "on", "cache_state": "cold", "load": {"concurrency": 4}}),
            ),
        ];
        let layout = Layout {
            rows: vec!["load".into()],
            columns: vec!["endpoint".into(), "cache_state".into()],
            metrics: vec![],
            preset: None,
            clock: None,
        }
        .resolve(&runs)
        .unwrap();
        assert_eq!(layout.metrics.len(), DEFAULT_METRICS.len());
        let p = Pivot::build(&runs, layout);
        assert_eq!(
            p.row_keys,
            vec![vec!["concurrency=1"], vec!["concurrency=4"]]
        );
        let labels = Labels::new(&runs);
        assert_eq!(
            labels.run(&runs[3]),
            "endpoint=on cache_state=cold load=concurrency=4"
        );
        assert_eq!(
            p.col_keys,
            vec![vec!["on", "cold"], vec!["on", "warm"], vec!["off", "cold"]]
        );
        assert_eq!(
            p.cells,
            vec![vec![Some(0), Some(1), Some(2)], vec![Some(3), None, None]]
        );
    }

    #[test]
    fn unplaced_varying_axes_join_the_rows() {
        let runs = vec![
            run(0, json!({"endpoint": "a", "model": "m", "input_tokens": 1})),
            run(1, json!({"endpoint": "b", "model": "m", "input_tokens": 2})),
        ];
        let layout = Layout {
            columns: vec!["endpoint".into()],
            ..Layout::default()
        };
        let l = layout.resolve(&runs).unwrap();
        assert_eq!(l.rows, vec!["input_tokens"]);
        let err = Layout {
            rows: vec!["modle".into()],
            ..Layout::default()
        }
        .resolve(&runs)
        .unwrap_err();
        assert!(err.to_string().contains("unknown axis `modle`"), "{err}");
        let err = Layout {
            metrics: vec!["ttft_p98".into()],
            ..Layout::default()
        }
        .resolve(&runs)
        .unwrap_err();
        assert!(err.to_string().contains("did you mean"), "{err}");
    }

    /// A load's ramp reads as the planner prints it whether or not its keys vary (a
    /// suite of one ramped run used to label it `concurrency_ramp=concurrencies=[1,2,4] …`).
    #[test]
    fn a_ramp_reads_as_the_planner_prints_it_in_any_label() {
        let c = json!({"concurrency_ramp": {"concurrencies": [1, 2, 4], "step": "8s"}});
        assert_eq!(axis_label(Some(&c)), "c=1,2,4 step 8s");
        let r = json!({"ramp": {"rates": [5, 20], "step": "1s"}, "arrivals": "constant"});
        assert_eq!(
            axis_label(Some(&r)),
            "rates 5,20/s step 1s arrivals=constant"
        );
        let one = [run(1, json!({"load": c.clone()}))];
        let labels = Labels::new(&one);
        assert_eq!(labels.value("load", Some(&c)), "c=1,2,4 step 8s");
    }
}
