//! Databases written by the previous version (schema 3, chunk times in the `chunks`
//! table) keep working: `report`, `compare` and a `--baseline` gate read the committed
//! fixture `tests/fixtures/schema-v3/results.db` (written by perfplan at schema 3 from the
//! plan beside it), writable — migrated in place — and read-only, read as it is.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use cli_support::{perfplan, query};
use perfplan::store::Store;
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema-v3")
}

/// A copy of the fixture database in `dir/name/results.db`.
fn copy_fixture(dir: &Path, name: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let db = folder.join("results.db");
    std::fs::copy(fixture().join("results.db"), &db).unwrap();
    db
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A new suite of the fixture's plan, written by this perfplan.
fn new_suite(dir: &Path) -> PathBuf {
    let out = dir.join("new");
    let plan = fixture().join("plan.toml");
    // The simulator shares the test machine: a late send is not what this tests.
    let o = perfplan(&[
        "run",
        s(&plan),
        "--out",
        s(&out),
        "--accept",
        "client_bound",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    out.join("results.db")
}

/// Every run's stored metrics, read with SQL (no perfplan involved).
fn stored_metrics(db: &Path) -> BTreeMap<String, BTreeMap<String, Option<f64>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Option<f64>>> = BTreeMap::new();
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT run_id, name, value FROM run_metrics")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    for row in rows {
        let (run, name, value): (String, String, Option<f64>) = row.unwrap();
        out.entry(run).or_default().insert(name, value);
    }
    out
}

fn assert_report_shows(db: &Path, stored: &BTreeMap<String, BTreeMap<String, Option<f64>>>) {
    let o = perfplan(&["report", s(db), "--format", "json"]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let runs: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let want = &stored[run["id"].as_str().unwrap()];
        for (name, value) in want {
            assert_eq!(run["metrics"][name].as_f64(), *value, "{name}");
        }
    }
}

#[test]
fn the_fixture_is_a_schema_3_database() {
    let dir = tempfile::tempdir().unwrap();
    let v: Vec<Vec<Option<i64>>> = query(&copy_fixture(dir.path(), "old"), "PRAGMA user_version");
    assert_eq!(v[0][0], Some(3));
}

#[test]
fn report_compare_and_baseline_read_a_schema_3_database() {
    let dir = tempfile::tempdir().unwrap();
    let old = copy_fixture(dir.path(), "old");
    let stored = stored_metrics(&old);
    let conn = rusqlite::Connection::open(&old).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT c.times_us, q.ttft_us, q.latency_us FROM requests q JOIN chunks c \
             USING (run_id, request_index) ORDER BY q.run_id, q.request_index",
        )
        .unwrap();
    let chunks: Vec<(String, u64, u64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(stmt);
    drop(conn);
    assert_report_shows(&old, &stored);

    // Rows of the old format come back with their chunk times and timings.
    let store = Store::open(&old).unwrap();
    let mut back = Vec::new();
    for run in store.runs().unwrap() {
        back.extend(store.request_rows(&run.id).unwrap());
    }
    drop(store);
    assert_eq!(back.len(), 13);
    assert_eq!(
        chunks.len(),
        13,
        "every request of the fixture has chunk times"
    );
    let us = Duration::from_micros;
    for (row, (json, ttft, latency)) in back.iter().zip(&chunks) {
        let times: Vec<u64> = serde_json::from_str(json).unwrap();
        let times: Vec<Duration> = times.into_iter().map(us).collect();
        assert_eq!(row.content_times, times);
        // Schema 3 computed these from nanoseconds, its chunk times are whole µs.
        let near = |a: Duration, b: u64| a.abs_diff(us(b)) <= us(1);
        assert!(
            near(row.ttft().unwrap(), *ttft),
            "{:?} vs {ttft}",
            row.ttft()
        );
        assert!(
            near(row.latency(), *latency),
            "{:?} vs {latency}",
            row.latency()
        );
    }

    let new = new_suite(dir.path());
    let o = perfplan(&["compare", s(&old), s(&new)]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("concurrency=2"), "{table}");
    // The old suite was timed by the client's reads, the new one by the kernel's stamps:
    // relative gates say so, and compare only when told the clock may differ.
    let o = perfplan(&[
        "report",
        s(&new),
        "--baseline",
        s(&old),
        "--gate",
        "success_ratio=>= -1%",
    ]);
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), err(&o));
    assert_eq!(code(&o), Some(9), "{said}");
    assert!(said.contains("clock user → kernel"), "{said}");
    let gate = |gate: &str| {
        let args = [
            "report",
            s(&new),
            "--baseline",
            s(&old),
            "--allow-changed",
            "clock",
        ];
        perfplan(&[&args[..], &["--gate", gate]].concat())
    };
    let o = gate("success_ratio=>= -1%");
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let o = gate("output_tps=>= +1000%");
    assert_eq!(code(&o), Some(1), "a failing baseline gate: {}", err(&o));
}

#[test]
fn a_read_only_schema_3_database_is_read_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let new = new_suite(dir.path());
    let old = copy_fixture(dir.path(), "old");
    let stored = stored_metrics(&old);
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = |args: &[&str]| -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_perfplan"));
        c.args(args);
        cli_support::unprivileged(c, dir.path()).output().unwrap()
    };
    let o = run(&["report", s(&old), "--format", "json"]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let runs: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    for r in &runs {
        let want = &stored[r["id"].as_str().unwrap()];
        assert_eq!(r["metrics"]["ttft_p50"].as_f64(), want["ttft_p50"]);
    }
    let o = run(&["compare", s(&old), s(&new)]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let o = run(&[
        "report",
        s(&new),
        "--baseline",
        s(&old),
        "--allow-changed",
        "clock",
        "--gate",
        "success_ratio=>= -1%",
    ]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let v: Vec<Vec<Option<i64>>> = query(&old, "PRAGMA user_version");
    assert_eq!(v[0][0], Some(3), "a read-only file is not migrated");
}

/// Rows written before reasoning and stream counts were kept (schema 12) read with them
/// absent: one token per content chunk, as their metrics were computed, so the per-token
/// `itl_*` recomputed from them is the stored `itl_*` and the same as `chunk_gap_*`.
#[test]
fn rows_before_stream_counts_read_as_one_token_a_chunk_with_their_metrics_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let old = copy_fixture(dir.path(), "old");
    let stored = stored_metrics(&old);
    let store = Store::open(&old).unwrap();
    for run in store.runs().unwrap() {
        let records = store.request_records(&run.id).unwrap();
        assert!(records.iter().all(|r| r.stream_tokens.is_none()
            && r.usage.reasoning_tokens.is_none()
            && r.client_reasoning_tokens.is_none()));
        let s = perfplan::metrics::summarize(&records, &Default::default());
        let (want, got) = (&stored[&run.id], &s.values);
        for stat in ["mean", "p50", "p99", "max"] {
            let name = format!("itl_{stat}");
            let (w, g) = (want[&name].unwrap(), got[&name].unwrap());
            assert!((w - g).abs() < 1e-3, "{name}: stored {w}, from rows {g}");
            assert_eq!(got[&format!("chunk_gap_{stat}")], got[&name], "{stat}");
        }
        assert_eq!(got["tokens_per_chunk_mean"], Some(1.0));
        assert_eq!(got["reasoning_tokens_mean"], None, "unknown in old rows");
    }
}

/// A schema-3 run's facts (`extras_json`) read typed: its counts, its `null`
/// `client_bound`, its definitions and its start, with nothing left unread; and written
/// again they are the text the earlier version stored.
#[test]
fn a_schema_3_runs_facts_read_typed() {
    let dir = tempfile::tempdir().unwrap();
    let old = copy_fixture(dir.path(), "old");
    let texts: Vec<Vec<Option<String>>> =
        query(&old, "SELECT extras_json FROM runs ORDER BY ordinal, id");
    let store = Store::open(&old).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), texts.len());
    for (run, text) in runs.iter().zip(&texts) {
        let facts = &run.facts;
        assert!(facts.requests.is_some_and(|n| n > 0), "{}", run.id);
        assert!(facts.stored_rows >= facts.requests, "{}", run.id);
        assert_eq!(facts.failures.as_ref().map(|f| f.len()), Some(0));
        assert_eq!(facts.client_bound, Some(None), "stored as null");
        assert_eq!(facts.metric_definitions.as_deref(), Some("perfplan"));
        assert!(facts.input_lengths.is_some() && facts.measured_start_unix_us.is_some());
        assert_eq!((facts.time.as_ref(), facts.connections), (None, None));
        assert!(facts.rest.is_empty(), "{:?}", facts.rest);
        assert_eq!(
            Some(facts.to_value().to_string()),
            text[0],
            "{}: written again as stored",
            run.id
        );
    }
}
