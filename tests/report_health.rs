//! Run health in every report: a run with some failed requests says so (a warning naming
//! the classes and the first error), its failure classes appear in the table, Markdown,
//! HTML, JSON and CSV; `report.md` carries the gate verdicts; `perfplan.log` holds the
//! report printed at the end of `run`. Driven through the binary against an in-process
//! simulator whose faults are deterministic (every 10 requests: 2 HTTP 500, 1 HTTP 503).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// One run of 40 measured requests, 12 of which fail (8 × 500, 4 × 503).
fn plan(gates: &str) -> String {
    format!(
        r#"
[plan]
name = "health"
seed = 1

[endpoints.sim]
base_url = "sim://faulty"

[endpoints.sim.sim]
ttft_base = "1ms"
itl_base = "1ms"
fault_http_500 = 0.2
fault_http_503 = 0.1

[models.m]
served_name = "m"

[datasets.hello]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 2

[matrix]
load = {{ concurrency = 4, requests = 40 }}

# The failures are what this test reads; a run with 30% failed is invalid by default.
[trust]
max_failed_share = 0.5
accept = ["client_bound"]

{gates}
"#
    )
}

/// Runs the plan into `dir/out`; returns the output folder and what the run printed.
fn run(dir: &Path, gates: &str) -> (std::path::PathBuf, Output) {
    let plan_path = dir.join("p.toml");
    std::fs::write(&plan_path, plan(gates)).unwrap();
    let out_dir = dir.join("out");
    let out = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    (out_dir, out)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Splits one CSV line (RFC 4180 quoting, no embedded newlines).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

const WARNING: &str = "12 of 40 measured requests failed: 8 http_500, 4 http_503; first: ";

#[test]
fn partial_failures_warn_and_show_their_classes() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, out) = run(tmp.path(), "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(WARNING), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("failures") && stdout.contains("12 of 40 failed: 8 http_500, 4 http_503"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        md.contains("12 of 40 failed: 8 http_500, 4 http_503"),
        "{md}"
    );
    assert!(md.contains(WARNING), "{md}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.contains("<th>failures</th>")
            && html.contains("12 of 40 failed: 8 http_500, 4 http_503"),
        "the HTML runs table has a failures column"
    );
    let table = perfplan(&["report", out_dir.to_str().unwrap()]);
    assert!(
        text(&table.stdout).contains("12 of 40 failed: 8 http_500, 4 http_503"),
        "{}",
        text(&table.stdout)
    );
}

#[test]
fn json_and_csv_carry_run_health() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, out) = run(tmp.path(), "[gates]\nsuccess_ratio = \">= 0.5\"\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json = perfplan(&["report", out_dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json.stderr));
    let runs: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    let run = &runs[0];
    let keys: Vec<&str> = run
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys[..6],
        ["id", "ordinal", "status", "verdict", "axes", "metrics"]
    );
    assert_eq!(run["verdict"]["status"], "valid", "{run}");
    assert_eq!(run["status"], "done");
    // The reason, or null: a 40-request run against an in-process simulator may well keep
    // the client's thread busy on a loaded machine, so either is right here.
    assert!(
        run["client_bound"].is_null() || run["client_bound"].is_string(),
        "{run}"
    );
    assert_eq!(run["failures"]["http_500"], 8, "{run}");
    assert_eq!(run["failures"]["http_503"], 4, "{run}");
    assert_eq!(run["failed_requests"], 12, "{run}");
    assert!(run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains(WARNING)));
    let gates = run["gates"].as_array().unwrap();
    assert_eq!(gates.len(), 1, "{run}");
    assert_eq!(gates[0]["gate"], "success_ratio");
    assert_eq!(gates[0]["passed"], true);

    let csv = perfplan(&["report", out_dir.to_str().unwrap(), "--format", "csv"]);
    let csv = text(&csv.stdout);
    let mut lines = csv.lines();
    let header = csv_fields(lines.next().unwrap());
    let row = csv_fields(lines.next().unwrap());
    let col = |name: &str| {
        let i = header.iter().position(|h| *h == name).unwrap();
        row[i].clone()
    };
    assert_eq!(header[..3], ["id", "ordinal", "status"]);
    assert_eq!(col("failed_requests"), "12");
    assert_eq!(col("failure_classes"), "http_500=8 http_503=4");
    assert_eq!(
        col("client_bound"),
        run["client_bound"].as_str().unwrap_or("")
    );
    let warnings = run["warnings"].as_array().unwrap().len();
    assert_eq!(col("warnings_count"), warnings.to_string());
}

#[test]
fn report_md_carries_the_gate_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, out) = run(tmp.path(), "[gates]\nsuccess_ratio = \">= 0.999\"\n");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        md.contains("### gates: FAIL") && md.contains("success_ratio"),
        "{md}"
    );
    let file = tmp.path().join("again.md");
    let again = perfplan(&[
        "report",
        out_dir.to_str().unwrap(),
        "--format",
        "md",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(1), "a failing gate still exits 1");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("### gates: FAIL"), "{written}");
    assert!(
        !text(&again.stderr).contains("### gates"),
        "the gates go to the file, not to stderr"
    );
}

#[test]
fn perfplan_log_holds_the_final_report_and_gates() {
    let tmp = tempfile::tempdir().unwrap();
    let (out_dir, out) = run(tmp.path(), "[gates]\nsuccess_ratio = \">= 0.999\"\n");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(out_dir.join("perfplan.log")).unwrap();
    assert!(log.contains("suite health — 1 runs"), "{log}");
    assert!(log.contains("12 of 40 failed"), "{log}");
    assert!(
        log.contains("perfplan: 1 runs done, 0 skipped, 0 failed"),
        "{log}"
    );
    assert!(
        log.contains("success_ratio") && log.contains("FAIL"),
        "{log}"
    );
}
