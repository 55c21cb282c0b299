//! An SLA search with an objective end to end over HTTP against an in-process simulator:
//! `output_tps = "max"` under a TTFT limit finds the busiest concurrency that keeps the
//! queue empty, stores it as `sla_best_concurrency`, and report, compare and gates read it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use perfplan::plan::{load_plan, LoadOptions};
use perfplan::report::{self, gates, Format, Layout, TableStyle};
use perfplan::store::Store;
use perfplan::suite::{run_suite, RunOptions};

/// ~50 ms requests (10 ms to the first token, 8 tokens at 5 ms) and 4 batch slots: past
/// 4 concurrent requests, queued ones wait a whole request, which the TTFT limit refuses.
const PLAN: &str = r#"
[plan]
name = "sla-objective"
seed = 5

[endpoints.sim]
base_url = "sim://s"
[endpoints.sim.sim]
ttft_base = "10ms"
itl_base = "5ms"
max_num_seqs = 4

[models.m]

[datasets.p]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 8
ignore_eos = true

[matrix]
load = { search = "concurrency", slo = { output_tps = "max", ttft_p90 = "<= 40ms" }, min = 1, max = 8, requests_per_step = 16 }
"#;

fn no_env(_: &str) -> Option<String> {
    None
}

fn run_dir(dir: &Path) -> Store {
    let path = dir.join("plan.toml");
    std::fs::write(&path, PLAN).unwrap();
    let opts = LoadOptions::new(Vec::new(), &no_env);
    let plan = load_plan(&path, &opts).unwrap_or_else(|r| panic!("{}", r.render()));
    let runs = perfplan::planner::expand(&plan).unwrap().runs;
    let opts = RunOptions {
        search: Some(&perfplan::search::DRIVER),
        out: Some(dir.join("out")),
        ..Default::default()
    };
    let outcome = run_suite(&plan, &runs, &opts).unwrap();
    assert!(!outcome.interrupted && outcome.failed == 0, "{outcome:?}");
    Store::open(&dir.join("out")).unwrap()
}

#[test]
fn max_objective_finds_the_best_passing_concurrency_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = run_dir(dir.path());
    let searches = store.searches().unwrap();
    assert_eq!(searches.len(), 1);
    let found = &searches[0];
    assert_eq!(found.outcome, "optimum", "{found:?}");
    assert!(
        found
            .message
            .contains("output_tps is highest at concurrency"),
        "{}",
        found.message
    );
    let best = found.best_pass.unwrap();
    let steps = store.search_steps(&found.run_id).unwrap();
    assert!(steps.len() <= 8, "{steps:?}");
    // The best is the passing step with the highest pooled output_tps (ties: lower load).
    let tps = |s: &perfplan::store::SearchStepRow| s.metrics["output_tps"].unwrap();
    let winner = steps
        .iter()
        .filter(|s| s.passed)
        .fold(None::<&perfplan::store::SearchStepRow>, |b, s| match b {
            Some(b) if tps(b) > tps(s) || (tps(b) == tps(s) && b.value < s.value) => Some(b),
            _ => Some(s),
        })
        .unwrap();
    assert_eq!(winner.value, best, "{steps:?}");
    for s in &steps {
        assert_eq!(s.passed, s.metrics["ttft_p90"].unwrap() <= 40.0, "{s:?}");
    }
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].metrics["sla_best_concurrency"], Some(best));
    assert_eq!(runs[0].metrics["sla_max_concurrency"], None);
    assert_eq!(runs[0].metrics["output_tps"], Some(tps(winner)));

    let render = |f| {
        report::render(
            &store,
            f,
            (&Layout::default(), &[]),
            TableStyle::default(),
            &[],
        )
    };
    let md = render(Format::Md).unwrap();
    assert!(md.contains("sla_best_concurrency"), "{md}");
    let html = render(Format::Html).unwrap();
    assert!(
        html.contains("SLA searches") && html.contains("SLA search: output_tps vs concurrency")
    );
    let json: serde_json::Value = serde_json::from_str(&render(Format::Json).unwrap()).unwrap();
    assert_eq!(
        json[0]["metrics"]["sla_best_concurrency"].as_f64(),
        Some(best)
    );

    let gate = ["sla_best_concurrency=>= -10%".to_string()];
    let same = gates::evaluate_suite(
        &store,
        (&gate, &[]),
        Some(gates::BaselineSuite::new(&store)),
        None,
    )
    .unwrap();
    assert_eq!(same.len(), 1);
    assert!(gates::all_passed(&same), "{same:?}");
    // A gate on the limit search's result does not apply to an objective search.
    let limit = ["sla_max_concurrency=>= 1".to_string()];
    assert!(gates::evaluate_suite(&store, (&limit, &[]), None, None)
        .unwrap()
        .is_empty());
    let cmp = report::compare::compare(&store, &store, &Default::default()).unwrap();
    assert_eq!(cmp.metrics[0], "sla_best_concurrency");
}
