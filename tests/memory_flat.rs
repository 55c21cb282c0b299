//! Memory does not grow with a run's request count: the peak RSS of a
//! 100,000-request run stays within 1.5× of a 10,000-request run's. Each run is a
//! `perfplan run` process against `perfplan sim` in a process of its own (1-token
//! streams, concurrency 64), its peak read from `/proc/<pid>/status` (`VmHWM`) while it
//! runs. Before records stopped being kept, the larger run held about 100,000 slimmed
//! records (some 45 MB) and failed this; so did the fold's first form, whose report
//! read every row of the run at once (37 against 78 MiB). Also: a run's rows can be read
//! while it runs. Linux only (reads `/proc`).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use cli_support::SimProcess;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_perfplan");

/// A simulator process with zero delays.
fn sim() -> SimProcess {
    SimProcess::start(&[
        "--ttft-base",
        "0ms",
        "--itl-base",
        "0ms",
        "--max-num-seqs",
        "8192",
    ])
}

/// `perfplan run PLAN --out OUT`, started.
fn start_run(plan: &Path, out: &Path) -> Child {
    Command::new(BIN)
        .arg("run")
        .arg(plan)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The peak RSS in KiB of `pid` so far, when it still runs.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A plan of 1-token requests against `url` with the load table `load`.
fn plan(dir: &Path, name: &str, url: &str, load: &str) -> std::path::PathBuf {
    let plan = dir.join(format!("plan-{name}.toml"));
    std::fs::write(
        &plan,
        format!(
            "[plan]\nname = \"memory\"\nseed = 1\n[endpoints.sim]\nbase_url = \"{url}\"\n\
             [models.m]\nserved_name = \"m\"\n[datasets.hello]\nkind = \"prompt\"\n\
             text = \"hello\"\n[defaults]\noutput_tokens = 1\nignore_eos = true\n\
             [matrix]\nload = {load}\n"
        ),
    )
    .unwrap();
    plan
}

/// Runs `requests` 1-token requests at concurrency 64; returns the run's peak RSS (KiB).
fn peak_of_run(dir: &Path, requests: u64) -> u64 {
    let sim = sim();
    let load = format!("{{ concurrency = 64, requests = {requests}, warmup = 64 }}");
    let plan = plan(dir, &requests.to_string(), &sim.url, &load);
    let mut child = start_run(&plan, &dir.join(format!("out-{requests}")));
    let (mut peak, since) = (0, Instant::now());
    let status = loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            since.elapsed() < Duration::from_secs(600),
            "the run took over 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "the {requests}-request run failed: {status}"
    );
    peak
}

#[test]
fn a_ten_times_larger_run_needs_no_more_than_half_again_the_memory() {
    let dir = tempfile::tempdir().unwrap();
    let small = peak_of_run(dir.path(), 10_000);
    let large = peak_of_run(dir.path(), 100_000);
    eprintln!("peak RSS: 10,000 requests {small} KiB, 100,000 requests {large} KiB");
    assert!(
        (large as f64) <= 1.5 * small as f64,
        "100,000 requests peaked at {large} KiB, more than 1.5 x the {small} KiB of 10,000: \
         records are kept again"
    );
}

#[test]
fn a_runs_rows_can_be_read_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim();
    let plan = plan(
        dir.path(),
        "live",
        &sim.url,
        "{ rate = 200, duration = \"4s\" }",
    );
    let out = dir.path().join("out-live");
    let mut child = start_run(&plan, &out);
    let db = out.join("results.db");
    let (mut seen, since) = (0i64, Instant::now());
    while child.try_wait().unwrap().is_none() && since.elapsed() < Duration::from_secs(60) {
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        if let Ok(conn) = rusqlite::Connection::open_with_flags(&db, flags) {
            if let Ok(n) = conn.query_row("SELECT COUNT(*) FROM requests", [], |r| r.get(0)) {
                seen = seen.max(n);
            }
        }
        if seen > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let running = child.try_wait().unwrap().is_none();
    let status = child.wait().unwrap();
    assert!(status.success(), "the run failed: {status}");
    assert!(
        seen > 0 && running,
        "rows read while the run ran: {seen} (still running: {running})"
    );
}
