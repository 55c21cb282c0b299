//! A results database that cannot be written stops the run with the file named, what to
//! do, and exit code 7 — never a success with rows missing: a full disk (SQLite's
//! `max_page_count` through the test-only `PERFPLAN_TEST_WRITER_MAX_PAGES`), a database
//! another connection holds locked, and a read-only file. Rows lost behind perfplan's back
//! fail the count check that follows every run (exit code 8).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;

const STORE_WRITE: i32 = 7;
const ROW_COUNT: i32 = 8;

fn sim_config() -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(2)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    }
}

/// A closed-loop plan of `requests` requests of 8 tokens against `base_url`.
fn write_plan(dir: &Path, base_url: &str, requests: u32) -> PathBuf {
    let text = format!(
        r#"
[plan]
name = "store-failures"
seed = 2

[endpoints.sim]
base_url = "{base_url}"

[models.m]

[datasets.p]
kind = "prompt"
text = "hello there"

[defaults]
output_tokens = 8
ignore_eos = true

[matrix]
load = {{ concurrency = 2, requests = {requests}, warmup = 2 }}
"#
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn command(plan: &Path, out_flag: &str, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    c.args([
        "run",
        plan.to_str().unwrap(),
        out_flag,
        out.to_str().unwrap(),
    ]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Waits for `child` at most `limit`; kills it (and fails) if it runs longer.
fn wait(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("perfplan still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Waits until the run has stored some rows (the writer is at work); returns the run id.
fn wait_for_rows(db: &Path, limit: Duration) -> String {
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < limit, "no rows stored within {limit:?}");
        // Read-only: opening must not create the file perfplan is about to create.
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        let found = rusqlite::Connection::open_with_flags(db, flags)
            .ok()
            .and_then(|c| {
                c.query_row(
                    "SELECT run_id FROM requests GROUP BY run_id HAVING COUNT(*) > 0",
                    [],
                    |r| r.get::<_, String>(0),
                )
                .ok()
            });
        if let Some(id) = found {
            return id;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn one(db: &Path, sql: &str) -> String {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0))
        .map(|v| format!("{v:?}"))
        .unwrap()
}

fn received(sim: &SimServer) -> usize {
    sim.received()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_run_at_once_naming_the_file() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), &sim.base_url(), 20_000);
    let out = dir.path().join("out");
    let mut c = command(&plan, "--out", &out);
    c.env("PERFPLAN_TEST_WRITER_MAX_PAGES", "0");
    let o = wait(c.spawn().unwrap(), Duration::from_secs(60));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(STORE_WRITE), "{err}");
    let db = out.join("results.db");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("the disk is full"), "{err}");
    assert!(err.contains("--resume"), "{err}");
    assert!(!err.contains("runs done"), "no success line: {err}");
    let sent = received(&sim);
    assert!(
        sent < 20_000,
        "the load stopped when the writer did ({sent} sent)"
    );
    assert_eq!(one(&db, "SELECT status FROM runs"), "Text(\"running\")");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_locked_by_another_connection_stops_the_run() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), &sim.base_url(), 20_000);
    let out = dir.path().join("out");
    let child = command(&plan, "--out", &out).spawn().unwrap();
    let db = out.join("results.db");
    wait_for_rows(&db, Duration::from_secs(30));
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.busy_timeout(Duration::from_secs(30)).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let o = wait(child, Duration::from_secs(60));
    holder.execute_batch("ROLLBACK").unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(STORE_WRITE), "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(
        err.contains("another process holds the database locked"),
        "{err}"
    );
    assert!(received(&sim) < 20_000, "the load stopped");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_read_only_database_stops_before_sending_anything() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), &sim.base_url(), 6);
    let out = dir.path().join("out");
    let o = wait(
        command(&plan, "--out", &out).spawn().unwrap(),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let db = out.join("results.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("UPDATE runs SET status = 'interrupted'", [])
        .unwrap();
    drop(c);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = received(&sim);
    let mut cmd = cli_support::unprivileged(command(&plan, "--resume", &out), dir.path());
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let o = wait(cmd.spawn().unwrap(), Duration::from_secs(60));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(STORE_WRITE), "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(received(&sim), before, "nothing was sent");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_lost_during_a_run_fail_the_count_check() {
    let sim = SimServer::start(SimConfig {
        itl_base: HumanDuration(Duration::from_millis(2)),
        ..sim_config()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // About 20 ms a request, two at a time: some 3 s of load.
    let plan = write_plan(dir.path(), &sim.base_url(), 300);
    let out = dir.path().join("out");
    let child = command(&plan, "--out", &out).spawn().unwrap();
    let db = out.join("results.db");
    let run = wait_for_rows(&db, Duration::from_secs(30));
    let mut c = rusqlite::Connection::open(&db).unwrap();
    c.busy_timeout(Duration::from_secs(30)).unwrap();
    let tx = c
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let status: String = tx
        .query_row("SELECT status FROM runs WHERE id = ?1", [&run], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(
        status, "running",
        "the run ended before rows could be taken"
    );
    let taken = tx
        .execute(
            "DELETE FROM requests WHERE run_id = ?1 AND request_index < 2",
            [&run],
        )
        .unwrap();
    tx.commit().unwrap();
    assert!(taken > 0);
    let o = wait(child, Duration::from_secs(60));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(ROW_COUNT), "{err}");
    assert!(err.contains("rows are missing"), "{err}");
    assert!(err.contains(&format!("run {run}")), "{err}");
    assert_eq!(one(&db, "SELECT status FROM runs"), "Text(\"failed\")");
    sim.shutdown().await;
}
