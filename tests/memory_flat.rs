//! Memory does not grow with a run's request count (issue 17): the peak RSS of a
//! 100,000-request run stays within 1.5× of a 10,000-request run's. Each run is a
//! `perfplan run` process against `perfplan sim` in a process of its own (1-token
//! streams, concurrency 64), its peak read from `/proc/<pid>/status` (`VmHWM`) while it
//! runs. Before records stopped being kept, the larger run held about 100,000 slimmed
//! records (some 45 MB) and failed this. Linux only (reads `/proc`).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_perfplan");

/// A simulator process with zero delays; killed when dropped.
struct Sim(Child, String);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sim() -> Sim {
    let mut child = Command::new(BIN)
        .args([
            "sim",
            "--port",
            "0",
            "--ttft-base",
            "0ms",
            "--itl-base",
            "0ms",
        ])
        .args(["--max-num-seqs", "8192"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    Sim(child, url)
}

/// The peak RSS in KiB of `pid` so far, when it still runs.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs `requests` 1-token requests at concurrency 64; returns the run's peak RSS (KiB).
fn peak_of_run(dir: &Path, requests: u64) -> u64 {
    let sim = sim();
    let plan = dir.join(format!("plan-{requests}.toml"));
    std::fs::write(
        &plan,
        format!(
            "[plan]\nname = \"memory\"\nseed = 1\n[endpoints.sim]\nbase_url = \"{}\"\n\
             [models.m]\nserved_name = \"m\"\n[datasets.hello]\nkind = \"prompt\"\n\
             text = \"hello\"\n[defaults]\noutput_tokens = 1\nignore_eos = true\n\
             [matrix]\nload = {{ concurrency = 64, requests = {requests}, warmup = 64 }}\n",
            sim.1
        ),
    )
    .unwrap();
    let out = dir.join(format!("out-{requests}"));
    let mut child = Command::new(BIN)
        .arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
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
