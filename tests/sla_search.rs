//! SLA search end to end against in-process simulators: the search finds the
//! simulator's batch limit under a queueing-sensitive TTFT SLO, a relaxed SLO finds
//! more, a rate search brackets the rate where TTFT p99 crosses the SLO, and an
//! interrupted search resumes without repeating finished probes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Mutex;

use perfplan::plan::{load_plan, LoadOptions, LoadedPlan};
use perfplan::store::{SearchRow, Store};
use perfplan::suite::{run_suite, RunOptions};

/// A simulator whose requests take ~100 ms (20 ms to the first token, 16 tokens at 5 ms):
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
itl_base = "5ms"
max_num_seqs = {max_num_seqs}

[models.m]

[datasets.p]
kind = "prompt"
text = "hello there"

[defaults]
output_tokens = 16
ignore_eos = true

# The searches' mechanics are under test here, not the client's health on a shared
# machine (tests/verdict.rs holds a search to the verdict).
[trust]
accept = ["client_bound"]

[matrix]
load = [{load}]
"#
    )
}

/// The searches time real requests: one at a time, so that they do not slow each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn no_env(_: &str) -> Option<String> {
    None
}

fn load(dir: &Path, text: &str) -> LoadedPlan {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    let opts = LoadOptions::new(Vec::new(), &no_env);
    load_plan(&path, &opts).unwrap_or_else(|r| panic!("{}", r.render()))
}

/// Runs the plan into `dir/out` (or resumes it); returns the one search result.
fn run(dir: &Path, plan: &LoadedPlan, resume: bool) -> SearchRow {
    let runs = perfplan::planner::expand(plan).unwrap().runs;
    let out = dir.join("out");
    let opts = RunOptions {
        search: Some(&perfplan::search::DRIVER),
        out: (!resume).then(|| out.clone()),
        resume: resume.then(|| out.clone()),
        ..Default::default()
    };
    let outcome = run_suite(plan, &runs, &opts).unwrap();
    assert!(!outcome.interrupted && outcome.failed == 0, "{outcome:?}");
    let store = Store::open(&out).unwrap();
    let mut searches = store.searches().unwrap();
    assert_eq!(searches.len(), 1);
    searches.remove(0)
}

const STRICT: &str = r#"{ search = "concurrency", slo = { ttft_p99 = "<= 70ms", success_ratio = ">= 0.99" }, min = 1, max = 64, requests_per_step = "2x", precision = "5%" }"#;

#[test]
fn concurrency_search_finds_the_batch_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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
        assert_eq!(s.passed, p99 <= 70.0, "step {s:?}");
    }
    // The search run is the only run reported; it carries the result as a metric.
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].metrics["sla_max_concurrency"], Some(best));
    assert_eq!(runs[0].metrics["sla_max_rate"], None);
    assert!(runs[0].metrics["goodput_rps"].unwrap() > 0.0);
    assert_eq!(store.probes(&found.run_id).unwrap().len(), steps.len());
}

#[test]
fn relaxed_slo_finds_more_concurrency() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let relaxed = STRICT
        .replace("<= 70ms", "<= 1s")
        .replace("max = 64", "max = 32, trials = 2");
    let found = run(
        dir.path(),
        &load(dir.path(), &plan_text(16, &relaxed)),
        false,
    );
    let best = found.best_pass.unwrap();
    assert_eq!(best, 32.0, "{found:?}");
    assert_eq!(found.outcome, "max_passes", "{found:?}");
    assert!(found.message.contains("raise `max`"), "{}", found.message);
    // Two probe runs per value; each step's verdict is over both trials' requests.
    let store = Store::open(&dir.path().join("out")).unwrap();
    let steps = store.search_steps(&found.run_id).unwrap();
    assert_eq!(store.probes(&found.run_id).unwrap().len(), 2 * steps.len());
    for s in &steps {
        let per_trial = (2.0 * s.value).max(16.0);
        assert_eq!(s.metrics["requests_ok"], Some(2.0 * per_trial), "{s:?}");
    }
}

#[test]
fn min_failing_stops_the_search_at_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let impossible = STRICT.replace("<= 70ms", "<= 1ms");
    let found = run(
        dir.path(),
        &load(dir.path(), &plan_text(16, &impossible)),
        false,
    );
    assert_eq!(found.outcome, "min_fails");
    assert_eq!((found.best_pass, found.first_fail), (None, Some(1.0)));
    assert!(
        found.message.contains("no load meets it"),
        "{}",
        found.message
    );
    let store = Store::open(&dir.path().join("out")).unwrap();
    assert_eq!(store.search_steps(&found.run_id).unwrap().len(), 1);
    let runs = store.runs().unwrap();
    assert_eq!(runs[0].metrics["sla_max_concurrency"], None);
}

/// Constant arrivals into 4 slots of ~100 ms: no queue below ~40 req/s, a growing one
/// above it. The search must bracket the rate where TTFT p99 crosses 70 ms, within 10%.
#[test]
fn rate_search_brackets_the_crossing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let search = r#"{ search = "rate", arrivals = "constant", slo = { ttft_p99 = "<= 70ms" }, min = 20, max = 640, requests_per_step = "1x", precision = "10%" }"#;
    let found = run(dir.path(), &load(dir.path(), &plan_text(4, search)), false);
    assert_eq!(found.outcome, "found", "{found:?}");
    let (pass, fail) = (found.best_pass.unwrap(), found.first_fail.unwrap());
    assert!(fail > pass && fail - pass <= 0.1 * pass + 1e-9, "{found:?}");
    let store = Store::open(&dir.path().join("out")).unwrap();
    let steps = store.search_steps(&found.run_id).unwrap();
    let at = |v: f64| steps.iter().find(|s| s.value == v).unwrap();
    assert!(at(pass).metrics["ttft_p99"].unwrap() <= 70.0);
    assert!(at(fail).metrics["ttft_p99"].unwrap() > 70.0);
    // The server's capacity, from the passing step's own latency: 4 slots / latency.
    let capacity = 4.0 / (at(pass).metrics["latency_mean"].unwrap() / 1000.0);
    assert!(
        pass >= 0.5 * capacity && pass <= 1.35 * capacity,
        "passing rate {pass} vs capacity {capacity:.1}"
    );
    assert!(steps.len() <= 10, "{} probes", steps.len());
    let runs = store.runs().unwrap();
    assert_eq!(runs[0].metrics["sla_max_rate"], Some(pass));
    assert_eq!(runs[0].metrics["sla_max_concurrency"], None);
}

/// A search killed while its 7th probe ran: `--resume` reuses the six finished probes
/// (same rows, same start times) and runs only the rest.
#[test]
fn interrupted_search_resumes_without_repeating_probes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let plan = load(dir.path(), &plan_text(16, STRICT));
    let first = run(dir.path(), &plan, false);
    let db = dir.path().join("out").join("results.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let started = |conn: &rusqlite::Connection| -> Vec<(String, u32, i64)> {
        let mut stmt = conn
            .prepare("SELECT p.run_id, p.step, r.started_unix_ms FROM search_probes p JOIN runs r ON r.id = p.run_id ORDER BY p.step")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let before = started(&conn);
    assert!(before.len() > 7);
    // The state a killed process leaves: probe 6 running with part of its requests,
    // later probes never started, the search running without a result.
    let later: Vec<&String> = before.iter().filter(|p| p.1 > 6).map(|p| &p.0).collect();
    for id in &later {
        for sql in [
            "DELETE FROM runs WHERE id = ?1",
            "DELETE FROM search_probes WHERE run_id = ?1",
            "DELETE FROM requests WHERE run_id = ?1",
            "DELETE FROM run_metrics WHERE run_id = ?1",
        ] {
            conn.execute(sql, [id]).unwrap();
        }
    }
    let killed = &before[6].0;
    conn.execute(
        "UPDATE runs SET status = 'running' WHERE id = ?1 OR id = ?2",
        [killed, &first.run_id],
    )
    .unwrap();
    conn.execute(
        "DELETE FROM requests WHERE run_id = ?1 AND request_index % 2 = 0",
        [killed],
    )
    .unwrap();
    conn.execute(
        "UPDATE search_probes SET verdict = NULL WHERE step >= 6",
        [],
    )
    .unwrap();
    conn.execute("DELETE FROM search_steps WHERE step >= 6", [])
        .unwrap();
    conn.execute("DELETE FROM searches", []).unwrap();
    drop(conn);
    let resumed = run(dir.path(), &plan, true);
    assert!(
        (15.0..=17.0).contains(&resumed.best_pass.unwrap()),
        "{resumed:?}"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let after = started(&conn);
    // The first six probes are the same rows, untouched; the seventh is the same probe,
    // rerun (later ones depend on its fresh verdict).
    for (b, a) in before.iter().zip(&after).take(7) {
        assert_eq!(a.0, b.0, "the same probes in the same order");
        if b.1 < 6 {
            assert_eq!(a.2, b.2, "probe {} was rerun", b.1);
        }
    }
    let (n, value): (i64, f64) = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM requests WHERE run_id = ?1), value
             FROM search_probes WHERE run_id = ?1",
            [&before[6].0],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // "2x" measured requests (at least 16) plus one warmup request per slot.
    assert_eq!(
        n as f64,
        (2.0 * value).max(16.0) + value,
        "the killed probe was rerun whole"
    );
    assert!(after[6].2 >= before[6].2, "the killed probe was rerun");
}

/// Two endpoints of ~50 ms requests, one with two batch slots; the search result is a
/// cell like any metric. The SLO is on p90, so that one scheduling hiccup of a loaded
/// test machine among a probe's 16 requests does not decide it.
fn report_plan(max_num_seqs: u32) -> String {
    format!(
        r#"
[plan]
name = "sla-report"

[endpoints.fast]
base_url = "sim://fast"
[endpoints.fast.sim]
ttft_base = "10ms"
itl_base = "5ms"
max_num_seqs = {max_num_seqs}

[endpoints.slow]
base_url = "sim://slow"
[endpoints.slow.sim]
ttft_base = "10ms"
itl_base = "5ms"
max_num_seqs = 2

[models.m]

[datasets.p]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 8
ignore_eos = true

[matrix]
endpoint = ["fast", "slow"]
load = {{ search = "concurrency", slo = {{ ttft_p90 = "<= 40ms" }}, min = 1, max = 8 }}

[slo]
ttft = "<= 40ms"

[report]
columns = ["endpoint"]
"#
    )
}

fn run_dir(dir: &Path, text: &str) -> Store {
    std::fs::create_dir_all(dir).unwrap();
    let plan = load(dir, text);
    let runs = perfplan::planner::expand(&plan).unwrap().runs;
    let opts = RunOptions {
        search: Some(&perfplan::search::DRIVER),
        out: Some(dir.join("out")),
        resume: None,
        ..Default::default()
    };
    run_suite(&plan, &runs, &opts).unwrap();
    Store::open(&dir.join("out")).unwrap()
}

#[test]
fn search_results_are_report_cells_plots_and_gates() {
    use perfplan::report::{self, gates, Format, Layout, TableStyle};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let base = run_dir(&dir.path().join("base"), &report_plan(8));
    let new = run_dir(&dir.path().join("new"), &report_plan(2));
    let render = |store: &Store, f| {
        report::render(
            store,
            f,
            (&Layout::default(), &[]),
            TableStyle::default(),
            &[],
        )
        .unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&render(&base, Format::Json)).unwrap();
    let runs = json.as_array().unwrap();
    assert_eq!(runs.len(), 2, "probe runs stay out of the report");
    let fast = runs
        .iter()
        .find(|r| r["axes"]["endpoint"] == "fast")
        .unwrap();
    let slow = runs
        .iter()
        .find(|r| r["axes"]["endpoint"] == "slow")
        .unwrap();
    assert!(
        fast["metrics"]["sla_max_concurrency"].as_f64().unwrap() >= 4.0,
        "{fast}"
    );
    assert!(
        slow["metrics"]["sla_max_concurrency"]
            .as_f64()
            .is_none_or(|v| v <= 2.0),
        "{slow}"
    );
    assert!(fast["metrics"]["sla_max_rate"].is_null());
    // Goodput counts the requests meeting the plan's per-request [slo], for every run.
    for run in [fast, slow] {
        let m = &run["metrics"];
        let (good, rps) = (
            m["goodput_rps"].as_f64().unwrap(),
            m["rps"].as_f64().unwrap(),
        );
        assert!(good > 0.0 && good <= rps, "{m}");
    }
    let slow_id = slow["id"].as_str().unwrap();
    let failing = base.search_steps(slow_id).unwrap();
    let failing = failing.iter().find(|s| !s.passed).unwrap();
    let m = &failing.metrics;
    assert!(m["goodput_rps"].unwrap() < m["rps"].unwrap(), "{m:?}");
    let md = render(&base, Format::Md);
    assert!(md.contains("sla_max_concurrency"), "{md}");
    let html = render(&base, Format::Html);
    assert!(html.contains("SLA searches") && html.contains("SLA search: ttft_p90 vs concurrency"));
    let gate = ["sla_max_concurrency=>= -10%".to_string()];
    let same = gates::evaluate_suite(
        &base,
        (&gate, &[]),
        Some(gates::BaselineSuite::new(&base)),
        None,
    )
    .unwrap();
    assert_eq!(same.len(), 2);
    assert!(gates::all_passed(&same), "{same:?}");
    let worse = gates::evaluate_suite(
        &new,
        (&gate, &[]),
        Some(gates::BaselineSuite::new(&base)),
        None,
    )
    .unwrap();
    assert_eq!(worse.len(), 2);
    let fast_gate = worse.iter().find(|g| g.run_label.contains("fast")).unwrap();
    assert!(!fast_gate.passed, "{fast_gate:?}");
    let cmp = report::compare::compare(&base, &new, &Default::default()).unwrap();
    assert_eq!(cmp.metrics[0], "sla_max_concurrency");
}

#[test]
fn invalid_searches_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = r#"{ search = "concurrency", rate = 3.0, slo = { ttft_p98 = "<= 2s", success_ratio = ">= 5%" }, min = 8, max = 4 }"#;
    let plan = load(dir.path(), &plan_text(16, bad));
    let diags = perfplan::planner::expand(&plan).unwrap_err();
    let text: Vec<String> = diags.iter().map(|d| format!("{d:?}")).collect();
    let all = text.join("\n");
    for needle in [
        "cannot set `rate`",
        "did you mean `ttft_p99`",
        "below `max`",
    ] {
        assert!(all.contains(needle), "{needle} missing from {all}");
    }
    assert!(diags.iter().all(|d| d.span.is_some()), "{all}");
}

/// Probe runs that finished, with their start times, by step.
fn finished_probes(db: &Path) -> Vec<(u32, String, i64)> {
    try_finished_probes(db).unwrap()
}

/// `finished_probes`, or an error while the database is still being created.
fn try_finished_probes(db: &Path) -> rusqlite::Result<Vec<(u32, String, i64)>> {
    let conn = rusqlite::Connection::open(db)?;
    let mut stmt = conn.prepare(
        "SELECT p.step, p.run_id, r.started_unix_ms FROM search_probes p
         JOIN runs r ON r.id = p.run_id WHERE r.status = 'done' ORDER BY p.step",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
}

/// A real Ctrl-C (SIGINT to the `perfplan run` child) in the middle of a search, then
/// `perfplan run --resume`: the probes finished before the interrupt are not sent again.
#[test]
fn ctrl_c_then_resume_repeats_no_finished_probe() {
    use std::process::Command;
    use std::time::{Duration, Instant};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, plan_text(16, STRICT)).unwrap();
    let out = dir.path().join("out");
    let bin = env!("CARGO_BIN_EXE_perfplan");
    let mut child = Command::new(bin)
        .arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let db = out.join("results.db");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(db.exists() && try_finished_probes(&db).is_ok_and(|p| p.len() >= 3)) {
        assert!(
            Instant::now() < deadline,
            "the search never finished 3 probes"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130), "an interrupted run exits 130");
    let before = finished_probes(&db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let searches: i64 = conn
        .query_row("SELECT COUNT(*) FROM searches", [], |r| r.get(0))
        .unwrap();
    assert_eq!(searches, 0, "an interrupted search has no result");
    drop(conn);
    let resumed = Command::new(bin)
        .arg("run")
        .arg(&plan)
        .arg("--resume")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(resumed.code(), Some(0));
    let after = finished_probes(&db);
    for (step, id, started) in &before {
        let again = after.iter().find(|a| &a.1 == id).unwrap();
        assert_eq!(
            (again.0, again.2),
            (*step, *started),
            "probe {step} was sent again"
        );
    }
    assert!(after.len() > before.len());
    let store = Store::open(&out).unwrap();
    let found = store.searches().unwrap().remove(0);
    assert!(
        (15.0..=17.0).contains(&found.best_pass.unwrap()),
        "{found:?}"
    );
}
