//! SLA search end to end against in-process simulators: the search finds the
//! simulator's batch limit under a queueing-sensitive TTFT SLO, a relaxed SLO finds
//! more, a rate search brackets the rate where TTFT p99 crosses the SLO, and an
//! interrupted search resumes without repeating finished probes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use perfplan::plan::{load_plan, LoadOptions, LoadedPlan};
use perfplan::runner::{run_suite, RunOptions};
use perfplan::store::{SearchRow, Store};

/// A simulator whose requests take ~50 ms (20 ms to the first token, 15 tokens at 2 ms):
/// past `max_num_seqs` concurrent requests, queued ones wait a whole request for a slot.
fn plan_text(max_num_seqs: u32, load: &str) -> String {
    format!(
        r#"
[plan]
name = "sla-test"
seed = 3

[endpoints.sim]
base_url = "sim://s"

[endpoints.sim.sim]
ttft_base = "20ms"
itl_base = "2ms"
max_num_seqs = {max_num_seqs}

[models.m]

[datasets.p]
kind = "prompt"
text = "hello there"

[defaults]
output_tokens = 15
ignore_eos = true

[matrix]
load = [{load}]
"#
    )
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn load(dir: &Path, text: &str) -> LoadedPlan {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    let opts = LoadOptions {
        sets: Vec::new(),
        env: &no_env,
    };
    load_plan(&path, &opts).unwrap_or_else(|r| panic!("{}", r.render()))
}

/// Runs the plan into `dir/out` (or resumes it); returns the one search result.
fn run(dir: &Path, plan: &LoadedPlan, resume: bool) -> SearchRow {
    let runs = perfplan::planner::expand(plan).unwrap().runs;
    let out = dir.join("out");
    let opts = RunOptions {
        out: (!resume).then(|| out.clone()),
        resume: resume.then(|| out.clone()),
    };
    let outcome = run_suite(plan, &runs, &opts).unwrap();
    assert!(!outcome.interrupted && outcome.failed == 0, "{outcome:?}");
    let store = Store::open(&out).unwrap();
    let mut searches = store.searches().unwrap();
    assert_eq!(searches.len(), 1);
    searches.remove(0)
}

const STRICT: &str = r#"{ search = "concurrency", slo = { ttft_p99 = "<= 45ms", success_ratio = ">= 0.99" }, min = 1, max = 64, requests_per_step = "4x", precision = "5%" }"#;

#[test]
fn concurrency_search_finds_the_batch_limit() {
    let dir = tempfile::tempdir().unwrap();
    let plan = load(dir.path(), &plan_text(16, STRICT));
    let found = run(dir.path(), &plan, false);
    assert_eq!(found.outcome, "found", "{found:?}");
    let best = found.best_pass.unwrap();
    assert!((15.0..=17.0).contains(&best), "{found:?}");
    assert_eq!(found.failed_metric.as_deref(), Some("ttft_p99"));
    let store = Store::open(&dir.path().join("out")).unwrap();
    let steps = store.search_steps(&found.run_id).unwrap();
    assert!(steps.len() <= 12, "{} probes", steps.len());
    for s in &steps {
        let p99 = s.metrics["ttft_p99"].unwrap();
        assert_eq!(s.passed, p99 <= 45.0, "step {s:?}");
    }
    // The search run is the only run reported; it carries the result as a metric.
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].metrics["sla_max_concurrency"], Some(best));
    assert_eq!(runs[0].metrics["sla_max_rate"], None);
    assert!(runs[0].metrics["goodput_rps"].unwrap() > 0.0);
    assert_eq!(store.probes(&found.run_id).unwrap().len(), steps.len());
}
