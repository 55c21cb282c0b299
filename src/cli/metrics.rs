//! `perfplan metrics [--format table|json]`: every metric name with its kind, unit,
//! direction and definition, from the metric registry (the names `[report]`, `[gates]`,
//! `--metrics`, CSV and JSON use).

use clap::Args;
use serde_json::json;

use super::exit;
use super::failure::{Ended, Failure};
use crate::metrics::{names, registry};
use crate::report::grid::Grid;
use crate::report::TableStyle;

#[derive(Debug, Args)]
pub(crate) struct MetricsArgs {
    /// `table` (a row per `<quantity>_<statistic>` family and per scalar, then the
    /// statistics) or `json` (every name, expanded, with its entry).
    #[arg(long, default_value = "table", value_name = "table|json")]
    pub format: String,
}

pub fn run(args: &MetricsArgs) -> Ended {
    match args.format.as_str() {
        "table" => print!("{}", table(TableStyle::detect())),
        "json" => println!("{}", json_text()),
        other => {
            return Err(Failure::new(
                exit::INVALID,
                format!("unknown format `{other}` (table, json)"),
            ))
        }
    }
    Ok(exit::OK)
}

/// The reference as a table: families and scalars, then the statistics.
pub fn table(style: TableStyle) -> String {
    let rows = registry::rows()
        .into_iter()
        .map(|r| {
            vec![
                r.name,
                r.kind.label().to_string(),
                r.unit.label().to_string(),
                r.direction.label().to_string(),
                r.definition,
            ]
        })
        .collect();
    let metrics = Grid {
        header: ["metric", "kind", "unit", "direction", "definition"]
            .map(String::from)
            .to_vec(),
        rows,
        label_cols: 5,
        notes: vec![
            "A mix run also has every name per class, as NAME@CLASS (`ttft_p99@rag`).".into(),
        ],
    };
    let statistics = Grid {
        header: vec!["statistic".into(), "definition".into()],
        rows: registry::statistics()
            .iter()
            .map(|s| vec![s.name.to_string(), s.definition.to_string()])
            .collect(),
        label_cols: 2,
        notes: Vec::new(),
    };
    let mut out = crate::report::table::render_grid(&metrics, style);
    out.push('\n');
    out.push_str(&crate::report::table::render_grid(&statistics, style));
    out
}

/// Every metric name of the vocabulary, in export order, with its entry.
pub fn json_text() -> String {
    let all: Vec<serde_json::Value> = names::all_names()
        .iter()
        .filter_map(|name| registry::lookup(name))
        .map(|m| {
            json!({
                "name": m.name,
                "kind": m.kind.label(),
                "unit": m.unit.label(),
                "direction": match m.direction {
                    registry::Direction::Higher => "higher",
                    registry::Direction::Lower => "lower",
                    registry::Direction::Neither => "none",
                },
                "definition": m.definition,
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::Value::Array(all)).unwrap_or_default()
}
