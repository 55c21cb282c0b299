//! An SLA search needs success, through the CLI against the simulator: a server that
//! rejects requests once its queue is full (`max_queued_requests`) answers the rejected
//! ones at once, so the latencies of those that succeed stay within a relaxed SLO. The
//! default success floor (`success_ratio >= 1.0`) stops the search below the load where
//! requests start to fail; `validate` and the search's sentence name the floor.

mod cli_support;

use cli_support::{perfplan, query};

/// 2 batch slots and at most 3 waiting requests; each request takes at least 85 ms, so
/// the server completes at most 23.5 requests/s. At a constant 16 req/s no request
/// waits; at 32 req/s the queue fills within half a second and later arrivals are
/// rejected at once, while those served stay far within the SLO.
fn plan(slo: &str) -> String {
    format!(
        r#"
[plan]
name = "sla-floor"
seed = 5

[endpoints.sim]
base_url = "sim://floor"

[endpoints.sim.sim]
ttft_base = "50ms"
itl_base = "5ms"
max_num_seqs = 2
max_queued_requests = 3

[models.m]

[datasets.p]
kind = "prompt"
text = "hello there"

[defaults]
output_tokens = 8
ignore_eos = true

# The simulator shares the test machine's cores: a late send is not what this tests.
[trust]
accept = ["client_bound"]

[matrix]
load = {{ search = "rate", arrivals = "constant", slo = {{ {slo} }}, min = 8, max = 200, requests_per_step = "2x", precision = "10%" }}
"#
    )
}

#[test]
fn a_search_stops_below_the_load_where_requests_fail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan(r#"ttft_p99 = "<= 5s""#)).unwrap();
    let plan_arg = path.to_str().unwrap();

    let v = perfplan(&["validate", plan_arg]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success(), "{stdout}");
    assert!(
        stdout.contains("success floor success_ratio >= 1.0 (the default"),
        "{stdout}"
    );

    let out = dir.path().join("out");
    let o = perfplan(&["run", plan_arg, "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("success floor success_ratio >= 1.0"),
        "{stderr}"
    );
    let db = out.join("results.db");
    let rows: Vec<Vec<Option<String>>> =
        query(&db, "SELECT outcome, failed_metric, message FROM searches");
    let (outcome, failed, message) = (
        rows[0][0].clone().unwrap(),
        rows[0][1].clone(),
        rows[0][2].clone().unwrap(),
    );
    assert_eq!(outcome, "found", "{message}");
    assert_eq!(failed.as_deref(), Some("success_ratio"), "{message}");
    assert!(
        message.contains("success floor: success_ratio >= 1.0 (the default)"),
        "{message}"
    );
    let best: Vec<Vec<Option<f64>>> = query(&db, "SELECT best_pass, first_fail FROM searches");
    let (best, fail) = (best[0][0].unwrap(), best[0][1].unwrap());
    assert!((16.0..32.0).contains(&best), "{message}");
    assert!(fail <= 32.0 && fail > best, "{message}");
    // Every passing step had no failed request; the failing one had some.
    let steps: Vec<Vec<Option<String>>> = query(
        &db,
        "SELECT verdict, CAST(json_extract(metrics_json, '$.success_ratio') AS TEXT) FROM search_steps",
    );
    for s in &steps {
        let ratio: f64 = s[1].as_deref().unwrap().parse().unwrap();
        assert_eq!(s[0].as_deref() == Some("pass"), ratio >= 1.0, "{steps:?}");
    }
}

#[test]
fn the_plan_may_lower_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    let slo = r#"ttft_p99 = "<= 5s", success_ratio = ">= 0.1""#;
    std::fs::write(&path, plan(slo)).unwrap();
    let v = perfplan(&["validate", path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&v.stdout);
    assert!(
        stdout.contains("success floor success_ratio >= 0.1 (from the search's `slo`)"),
        "{stdout}"
    );
}
