//! `stop_when = "saturated"` and `on_saturation = "skip_higher"`, through the CLI over
//! real HTTP against the built-in simulator (4 batch slots of ~55 ms requests: about
//! 70 requests a second, timing jitter on): an open loop at three times that stops within
//! a bounded time, stored with the reason and shown in the report, and the tier above it
//! is skipped with a note; a concurrency ramp past the slots stops too; loads the server
//! keeps up with (open at half and two thirds of its capacity, closed within its slots)
//! run to their end; a misplaced or misspelt key is a located error. About 15 s in all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::time::Instant;

use cli_support::{perfplan, query, report_json, run};

/// Slices of 200 ms: the rule's window of 10 slices is 2 s.
const HEAD: &str = r#"
[plan]
name = "saturation"
seed = 11

[endpoints.sim]
base_url = "sim://saturation"

[endpoints.sim.sim]
ttft_base = "15ms"
itl_base = "5ms"
max_num_seqs = 4
jitter = 0.2
seed = 3

[models.m]

[datasets.hi]
kind = "prompt"
text = "Say hello."

[defaults]
output_tokens = 8
ignore_eos = true

[report]
slice = "200ms"
"#;

fn plan_with(dir: &std::path::Path, matrix: &str) -> std::path::PathBuf {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{matrix}\n")).unwrap();
    plan
}

fn stopped(db: &std::path::Path) -> Vec<serde_json::Value> {
    query::<String>(db, "SELECT extras_json FROM runs ORDER BY ordinal")
        .into_iter()
        .map(|row| serde_json::from_str(row[0].as_deref().unwrap_or("null")).unwrap())
        .collect()
}

#[test]
fn an_overloaded_tier_stops_early_and_the_tier_above_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    // 210/s for 20 s unstopped (4,200 requests); the simulator completes ~70/s.
    let matrix = r#"load = [
  { rate = 210, requests = 4200, stop_when = "saturated", on_saturation = "skip_higher" },
  { rate = 420, requests = 8400, stop_when = "saturated", on_saturation = "skip_higher" },
  { concurrency_ramp = { from = 1, to = 64, over = "8s" }, stop_when = "saturated" },
]"#;
    let plan = plan_with(dir.path(), matrix);
    let since = Instant::now();
    let db = run(&plan, &dir.path().join("out"));
    // The rule's window (2 s), a slice of lag, then at most the 5 s grace for the queue.
    assert!(
        since.elapsed().as_secs_f64() < 12.0,
        "{:?}",
        since.elapsed()
    );
    let extras = stopped(&db);
    let stop = &extras[0]["time"]["stopped"];
    assert_eq!(stop["reason"], "saturated", "{}", extras[0]);
    let at = stop["at_s"].as_f64().unwrap();
    assert!((1.5..=4.0).contains(&at), "stopped at {at} s");
    let flight = stop["in_flight"].as_array().unwrap();
    assert!(flight[1].as_f64().unwrap() > 1.5 * flight[0].as_f64().unwrap());
    let runs = report_json(&db);
    assert_eq!(
        (runs[0]["status"].as_str(), runs[1]["status"].as_str()),
        (Some("done"), Some("done"))
    );
    // Suspect at least (a busy debug client may also be `client_bound`).
    assert_ne!(runs[0]["verdict"]["status"], "valid");
    let reasons = runs[0]["verdict"]["reasons"].as_array().unwrap();
    assert!(reasons
        .iter()
        .any(|r| r["code"] == "saturated" && r["severity"] == "suspect"));
    // An open loop is judged against its arrival rate; the requests the stop cut short
    // are said with it, not counted as the server's failures.
    assert_eq!(stop["arrivals_per_s"], 210.0, "{stop}");
    assert!(stop["cancelled"].as_u64().is_some(), "{stop}");
    assert!(
        !reasons.iter().any(|r| r["code"] == "failures"),
        "{reasons:?}"
    );
    let ok = runs[0]["metrics"]["requests_ok"].as_f64().unwrap();
    assert!(ok > 50.0 && ok < 1500.0, "{ok} requests ended ok");
    // The tier above: skipped with a note naming the stopped one, no requests.
    assert_eq!(extras[1]["skipped"]["by"], runs[0]["id"]);
    let note = runs[1]["warnings"][0].as_str().unwrap();
    assert!(
        note.starts_with("saturated: skipped: a tier above"),
        "{note}"
    );
    let rows = query::<i64>(
        &db,
        "SELECT COUNT(*) FROM requests WHERE run_id = (SELECT id FROM runs WHERE ordinal = 2)",
    );
    assert_eq!(rows[0][0], Some(0));
    // A closed loop whose slots climb past the capacity stops too (not a fixed tier:
    // not skipped), before its 8 s ramp ends.
    let ramp_at = extras[2]["time"]["stopped"]["at_s"].as_f64();
    assert!(ramp_at.is_some_and(|t| t < 6.0), "{}", extras[2]);
    // The table shows the stop among the verdicts.
    let o = perfplan(&["report", db.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("suspect saturated: stopped at"), "{table}");
    assert!(table.contains("skipped: a tier above"), "{table}");
    // --resume reads the stop back: nothing runs again, the skipped tier stays skipped.
    let o = perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--resume",
        dir.path().join("out").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("0 runs done, 3 skipped"), "{err}");
}

#[test]
fn loads_the_server_keeps_up_with_run_to_their_end() {
    let dir = tempfile::tempdir().unwrap();
    // Open at half the capacity (Poisson bursts and jitter on), closed within the slots,
    // each for about 4 s: 20 windows judged apiece.
    let matrix = r#"load = [
  { rate = 35, requests = 140, stop_when = "saturated", on_saturation = "skip_higher" },
  { concurrency = 4, requests = 280, warmup = 4, stop_when = "saturated" },
  { rate = 50, requests = 200, stop_when = "saturated", on_saturation = "skip_higher" },
]"#;
    let plan = plan_with(dir.path(), matrix);
    let db = run(&plan, &dir.path().join("out"));
    let extras = stopped(&db);
    let runs = report_json(&db);
    for (r, e) in runs.iter().zip(&extras) {
        assert!(
            e["time"]["stopped"].is_null() && e["skipped"].is_null(),
            "{e}"
        );
        let reasons = r["verdict"]["reasons"].as_array().unwrap();
        assert!(!reasons.iter().any(|x| x["code"] == "saturated"), "{r}");
    }
    let ok: Vec<f64> = runs
        .iter()
        .map(|r| r["metrics"]["requests_ok"].as_f64().unwrap())
        .collect();
    assert_eq!(ok, [140.0, 280.0, 200.0]);
}

#[test]
fn misplaced_or_misspelt_keys_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"load = { rate = 5, requests = 5, stop_when = "saturatd" }"#,
            "saturated",
        ),
        (
            r#"load = { rate = 5, requests = 5, stop_wen = "saturated" }"#,
            "stop_when",
        ),
        (
            r#"load = { rate = 5, requests = 5, on_saturation = "skip_higher" }"#,
            "needs `stop_when",
        ),
        (
            r#"load = { explore = { from = 1, max = 8, step = "1s" }, stop_when = "saturated" }"#,
            "does not apply to an exploring load",
        ),
        (
            r#"load = { ramp = { from = 1, to = 8, over = "2s" }, stop_when = "saturated", on_saturation = "skip_higher" }"#,
            "fixed `concurrency` or `rate`",
        ),
    ];
    for (load, said) in cases {
        let plan = plan_with(dir.path(), load);
        let o = perfplan(&["validate", plan.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{load}");
        assert!(err.contains(said), "{load}: {err}");
        assert!(err.contains("plan.toml:"), "{load}: {err}");
    }
    // Off by default: a plan without the keys expands without them.
    let plan = plan_with(dir.path(), "load = { rate = 5, requests = 5 }");
    let o = perfplan(&["expand", plan.to_str().unwrap(), "--json"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && !text.contains("stop_when") && !text.contains("on_saturation"));

    // Under --shard the stop is not applied (each shard sees only its share), and said.
    let plan = plan_with(
        dir.path(),
        r#"load = { rate = 20, requests = 10, stop_when = "saturated" }"#,
    );
    let out = dir.path().join("shard");
    let o = perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--shard",
        "1/1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = report_json(&out.join("shard-1-of-1/results.db"));
    let said = runs[0]["warnings"].to_string();
    assert!(said.contains("not applied under --shard"), "{said}");
}
