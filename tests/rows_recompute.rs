//! Metrics recomputed from stored rows equal the live run's, through the binary, under
//! every `metric_definitions`: a one-shard suite merged (`merge` recomputes every metric
//! from the rows) and an SLA search (each step's metrics come from its probe's rows).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::collections::BTreeMap;
use std::path::Path;

use cli_support::perfplan;
use perfplan::metrics::names::all_names;
use perfplan::store::Store;

const DEFINITIONS: [&str; 3] = ["perfplan", "vllm", "evalscope"];

/// Streams with a role chunk first and a finish chunk after the last content, so the
/// three definitions time them differently; some HTTP 500s and cut streams.
fn plan(definitions: &str, load: &str) -> String {
    format!(
        r#"
[plan]
name = "recompute"
seed = 11
metric_definitions = "{definitions}"

[endpoints.sim]
base_url = "sim://r"

[endpoints.sim.sim]
ttft_base = "3ms"
itl_base = "1ms"
tokens_per_chunk = 2
prefix_cache = true
fault_http_500 = 0.1
fault_drop = 0.1

[models.m]

[datasets.p]
kind = "prompt"
text = "the same prompt every time, so the prefix cache finds it"

[defaults]
output_tokens = 9
ignore_eos = true

[slo]
ttft = "<= 50ms"

[matrix]
load = {load}
"#
    )
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success() || out.status.code() == Some(4),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every run's stored metrics by run id.
fn metrics(db: &Path) -> BTreeMap<String, BTreeMap<String, Option<f64>>> {
    let store = Store::open(db).unwrap();
    store
        .runs()
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.metrics))
        .collect()
}

fn assert_equal(
    live: &BTreeMap<String, Option<f64>>,
    back: &BTreeMap<String, Option<f64>>,
    skip: &[&str],
    what: &str,
) {
    for name in all_names().iter().filter(|n| !skip.contains(&n.as_str())) {
        let (a, b) = (live.get(name), back.get(name));
        assert!(a.is_some(), "{what}: `{name}` not stored");
        let bits = |v: Option<&Option<f64>>| v.map(|v| v.map(f64::to_bits));
        assert_eq!(
            bits(a),
            bits(b),
            "{what}: `{name}` live {a:?}, from rows {b:?}"
        );
    }
}

#[test]
fn a_merged_suite_recomputes_every_metric_as_the_live_run_under_every_definition() {
    for defs in DEFINITIONS {
        let dir = tempfile::tempdir().unwrap();
        let loads =
            r#"[{ concurrency = 3, requests = 40, warmup = 3 }, { rate = 200, requests = 30 }]"#;
        let plan = write(dir.path(), &plan(defs, loads));
        let shard = dir.path().join("shard");
        let merged = dir.path().join("merged");
        let s = |p: &Path| p.to_str().unwrap().to_string();
        ok(&perfplan(&[
            "run",
            &plan,
            "--shard",
            "1/1",
            "--out",
            &s(&shard),
        ]));
        ok(&perfplan(&["merge", &s(&merged), &s(&shard)]));
        let (live, back) = (metrics(&shard), metrics(&merged));
        assert_eq!(live.len(), 2);
        for (id, m) in &live {
            assert!(m["requests_failed"].unwrap() > 0.0, "the plan has failures");
            assert_equal(m, &back[id], &[], &format!("{defs}, run {id}"));
        }
    }
}

#[test]
fn sla_search_steps_from_rows_equal_their_probes_live_metrics_under_every_definition() {
    // Pooled steps know nothing of the client's CPU or the server's counters.
    let not_from_rows = [
        "client_cpu_ratio",
        "server_cache_hit_ratio",
        "planned_prefix_share",
    ];
    for defs in DEFINITIONS {
        let dir = tempfile::tempdir().unwrap();
        let search = r#"{ search = "concurrency", slo = { ttft_p99 = "<= 10s" }, min = 1, max = 2, requests_per_step = 12, trials = 1 }"#;
        let plan = write(dir.path(), &plan(defs, search));
        let out = dir.path().join("out");
        ok(&perfplan(&["run", &plan, "--out", out.to_str().unwrap()]));
        let store = Store::open(&out).unwrap();
        let searches = store.searches().unwrap();
        let steps = store.search_steps(&searches[0].run_id).unwrap();
        let probes = store.probes(&searches[0].run_id).unwrap();
        assert_eq!((steps.len(), probes.len()), (2, 2), "{defs}");
        for (step, probe) in steps.iter().zip(&probes) {
            assert_eq!(step.step, probe.step);
            let live: BTreeMap<String, Option<f64>> = all_names()
                .into_iter()
                .map(|n| {
                    let v = store.run_metric(&probe.run_id, &n).unwrap();
                    (n, v)
                })
                .collect();
            let what = format!("{defs}, step {}", step.step);
            assert_equal(&live, &step.metrics, &not_from_rows, &what);
        }
    }
}
