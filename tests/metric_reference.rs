//! The metric reference comes from the registry and cannot drift: the book's metric table
//! (`docs/src/metrics/names.md`) is `registry::markdown_table()` exactly (regenerate it
//! with `PERFPLAN_WRITE_METRICS=1 cargo test --test metric_reference`, or
//! `PERFPLAN_WRITE_DOCS=1`, which regenerates the CLI reference too), and
//! `perfplan metrics` names every metric of the vocabulary with its entry.

use perfplan::metrics::{names, registry};

const BEGIN: &str = "<!-- metrics:begin (generated from src/metrics/registry_defs.rs) -->\n";
const END: &str = "<!-- metrics:end -->";
const PAGE: &str = "docs/src/metrics/names.md";

#[test]
fn book_metric_table_is_the_registrys() {
    let readme = std::fs::read_to_string(PAGE).unwrap();
    let start = readme
        .find(BEGIN)
        .expect("the metric names page has the metric table's begin marker");
    let body_start = start + BEGIN.len();
    let end = body_start + readme[body_start..].find(END).expect("an end marker");
    let current = registry::markdown_table();
    let write = ["PERFPLAN_WRITE_METRICS", "PERFPLAN_WRITE_DOCS"];
    if write.iter().any(|v| std::env::var_os(v).is_some()) {
        let text = format!("{}{current}{}", &readme[..body_start], &readme[end..]);
        std::fs::write(PAGE, text).unwrap();
        return;
    }
    assert!(
        readme[body_start..end] == current,
        "the book's metric table ({PAGE}) is stale: regenerate it with \
         `PERFPLAN_WRITE_METRICS=1 cargo test --test metric_reference`"
    );
}

#[test]
fn metrics_command_lists_every_name_with_unit_direction_and_definition() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["metrics", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let listed: Vec<&str> = list.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(listed, names::all_names());
    let rps = list.iter().find(|m| m["name"] == "rps").unwrap();
    assert_eq!(rps["unit"], "req/s");
    assert_eq!(rps["direction"], "higher");
    assert!(rps["definition"]
        .as_str()
        .unwrap()
        .contains("successful requests"));
    let ttft = list.iter().find(|m| m["name"] == "ttft_p99").unwrap();
    assert_eq!(
        (ttft["unit"].as_str(), ttft["direction"].as_str()),
        (Some("ms"), Some("lower"))
    );
    let table = std::process::Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .arg("metrics")
        .output()
        .unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    for name in [
        "ttft_<statistic>",
        "output_tps",
        "energy_j_per_output_token",
        "p999",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
}
