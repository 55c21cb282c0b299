//! Mixes in reports: each class of a mix run (`kind = "mix"`) with its own metrics, read
//! from the run's facts (`mix`: each class's name, dataset, model, weight, planned share
//! and measured requests) and its stored metrics (`NAME@CLASS`, the same vocabulary as
//! the run's). Shown after the pivot as one table row per class in the table, Markdown
//! and HTML, and as `classes` in the JSON; a run that is not a mix shows none.

use serde_json::{json, Map, Value};

use super::format::{displays_of, number};
use super::grid::{Grid, UNKNOWN};
use super::pivot::Labels;
use super::plots::{ClassCdfs, Digest};
use super::svg::{Chart, Series};
use super::ReportError;
use crate::metrics::names::{self, class_metric};
use crate::store::StoredRun;

/// The metrics of each class's row, after its share.
pub(crate) const CLASS_METRICS: [&str; 7] = [
    "requests_ok",
    "requests_failed",
    "ttft_p50",
    "ttft_p99",
    "tpot_p50",
    "latency_p50",
    "output_tps",
];

/// One class of a mix run, as its facts keep it.
pub(crate) type ClassInfo = crate::record::facts::MixClassFacts;

/// The classes of a run (empty for a run that is not a mix, and in databases before).
pub(crate) fn of_run(run: &StoredRun) -> Vec<ClassInfo> {
    run.facts.mix.clone().unwrap_or_default()
}

/// A class's value of `metric` in `run`.
pub fn value(run: &StoredRun, metric: &str, class: &str) -> Option<f64> {
    run.metrics
        .get(&class_metric(metric, class))
        .copied()
        .flatten()
}

/// A class's measured share of its run's measured requests.
fn measured_share(all: &[ClassInfo], class: &ClassInfo) -> Option<f64> {
    let total: u64 = all.iter().map(|c| c.requests).sum();
    (total > 0).then(|| class.requests as f64 / total as f64)
}

/// The JSON of a mix run's classes: `{NAME: {dataset, model, weight, planned_share,
/// measured_share, requests, metrics: {every metric of the vocabulary}}}`.
pub(crate) fn json_of(run: &StoredRun) -> Option<Value> {
    let classes = of_run(run);
    if classes.is_empty() {
        return None;
    }
    let mut out = Map::new();
    for class in &classes {
        let metrics: Map<String, Value> = names::all_names()
            .into_iter()
            .map(|m| {
                let v = value(run, &m, &class.name);
                (m, v.map_or(Value::Null, |v| json!(v)))
            })
            .collect();
        out.insert(
            class.name.clone(),
            json!({
                "dataset": class.dataset,
                "model": class.model,
                "weight": class.weight,
                "planned_share": class.planned_share,
                "measured_share": measured_share(&classes, class),
                "requests": class.requests,
                "metrics": metrics,
            }),
        );
    }
    Some(Value::Object(out))
}

/// One row per class of every mix run: the run, the class, its dataset (and model when
/// its own), its planned and measured share, then each of `CLASS_METRICS`.
pub fn grid(runs: &[StoredRun]) -> Option<Grid> {
    let mixed: Vec<(&StoredRun, Vec<ClassInfo>)> = runs
        .iter()
        .map(|r| (r, of_run(r)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if mixed.is_empty() {
        return None;
    }
    let labels = Labels::new(runs);
    let displays = displays_of(&CLASS_METRICS, |m| {
        mixed
            .iter()
            .flat_map(|(r, cs)| cs.iter().filter_map(|c| value(r, m, &c.name)))
            .collect()
    });
    let mut header: Vec<String> = ["run", "class", "dataset", "share planned", "share measured"]
        .map(String::from)
        .to_vec();
    header.extend(displays.iter().map(|(m, d)| d.header(m)));
    let mut rows = Vec::new();
    for (run, classes) in &mixed {
        for class in classes {
            let dataset = match &class.model {
                Some(model) => format!("{} ({model})", class.dataset),
                None => class.dataset.clone(),
            };
            let mut row = vec![
                format!("#{} {}", run.ordinal, labels.run(run)),
                class.name.clone(),
                dataset,
                number(class.planned_share),
                measured_share(classes, class).map_or(UNKNOWN.to_string(), number),
            ];
            row.extend(displays.iter().map(|(m, d)| {
                value(run, m, &class.name).map_or(UNKNOWN.to_string(), |v| d.value(v))
            }));
            rows.push(row);
        }
    }
    Some(Grid {
        header,
        rows,
        label_cols: 2,
        notes: vec![
            "each class: its own measured requests, folded as the run's are (rates over the class's own first send to last end); gate one as METRIC@CLASS".into(),
        ],
    })
}

/// `report --by-class`: one CSV row per class of every mix run: `run`, `class`,
/// `dataset`, `model` (empty: the run's), `weight`, `planned_share`, `measured_share`,
/// `requests`, then `metrics` (default [`CLASS_METRICS`]; durations in ms, as everywhere
/// in CSV).
pub(crate) fn render_csv(runs: &[StoredRun], metrics: &[String]) -> Result<String, ReportError> {
    let metrics = super::csv::breakdown_metrics("--by-class", metrics, &CLASS_METRICS)?;
    let mut out = format!(
        "run,class,dataset,model,weight,planned_share,measured_share,requests,{}\n",
        metrics.join(",")
    );
    for run in runs {
        let classes = of_run(run);
        for class in &classes {
            let mut fields = vec![
                run.id.clone(),
                super::csv::quote(&class.name),
                super::csv::quote(&class.dataset),
                super::csv::quote(class.model.as_deref().unwrap_or_default()),
                class.weight.to_string(),
                class.planned_share.to_string(),
                super::csv::cell(measured_share(&classes, class)),
                class.requests.to_string(),
            ];
            fields.extend(
                metrics
                    .iter()
                    .map(|m| super::csv::cell(value(run, m, &class.name))),
            );
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    Ok(out)
}

/// TTFT and latency CDFs of every mix run's classes, one line per (run, class)
/// (`digests[i]` belongs to `runs[i]`); none without a mix run.
pub fn charts(runs: &[StoredRun], digests: &[Digest]) -> Vec<Chart> {
    type Pick = fn(&ClassCdfs) -> &Vec<(f64, f64)>;
    let labels = Labels::new(runs);
    let picks: [(&str, Pick); 2] = [("TTFT", |c| &c.ttft), ("latency", |c| &c.latency)];
    let mut out = Vec::new();
    for (quantity, pick) in picks {
        let mut series = Vec::new();
        for (run, digest) in runs.iter().zip(digests) {
            let classes = of_run(run);
            for (c, cdfs) in &digest.classes {
                let Some(class) = classes.get(usize::from(*c)) else {
                    continue;
                };
                if pick(cdfs).is_empty() {
                    continue;
                }
                series.push(Series {
                    name: format!(
                        "#{} {} · {}",
                        run.ordinal,
                        labels.short(run, &[]),
                        class.name
                    ),
                    points: pick(cdfs).clone(),
                    markers: false,
                    scatter: false,
                    labels: Vec::new(),
                });
            }
        }
        if !series.is_empty() {
            out.push(Chart {
                title: format!("{quantity} CDF by mix class"),
                x_label: format!("{quantity} (ms)"),
                y_label: "share of requests".into(),
                series,
                how: format!(
                    "one line per run and mix class; {}",
                    super::plots::CDF_HOW.trim_start_matches("one line per run; ")
                ),
                ..Chart::default()
            });
        }
    }
    out
}
