//! Ctrl-C and SIGTERM say at once the exact command that continues the suite (`perfplan
//! run PLAN … --resume DIR`, the same `--set` flags), and again when the suite stops.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PLAN: &str = r#"
[plan]
name = "long"
[endpoints.sim]
base_url = "sim://long"
[endpoints.sim.sim]
ttft_base = "5ms"
itl_base = "5ms"
[models.m]
[datasets.d]
kind = "prompt"
text = "a long one"
[defaults]
output_tokens = 50
ignore_eos = true
[matrix]
load = { concurrency = 1, requests = 400, warmup = 1 }
"#;

fn interrupted_by(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), PLAN).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .current_dir(dir.path())
        .args([
            "run",
            "p.toml",
            "--set",
            "defaults.output_tokens=200",
            "--out",
            "results",
        ])
        .args(["--progress-every", "off"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    // Wait until the suite has started its run, then interrupt it.
    while !text.contains("results in") {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("perfplan ended before its run: {text}");
        }
        text.push_str(&line);
    }
    std::thread::sleep(Duration::from_millis(300));
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("perfplan did not stop after {signal}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    text.push_str(&reader.join().unwrap());
    assert_eq!(status.code(), Some(130), "{text}");
    let cmd = "perfplan run p.toml --set defaults.output_tokens=200 --progress-every off --resume results";
    assert!(
        text.matches(cmd).count() >= 2,
        "said at once and at the end: {text}"
    );
    let at_once = text
        .find("interrupted; letting requests in flight finish")
        .unwrap();
    assert!(text[at_once..].find(cmd).is_some(), "{text}");
}

#[test]
fn sigterm_says_the_command_that_resumes() {
    interrupted_by("-TERM");
}

#[test]
fn ctrl_c_says_the_command_that_resumes() {
    interrupted_by("-INT");
}
