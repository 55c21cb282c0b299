//! The binary driven from tests: run a plan, read its report and its database.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The exploring-load tests' simulator and request: 8 slots, 20 ms to the first token,
/// 4 ms a token, 16 tokens: a request takes ~80 ms; past 8 in flight, requests wait for
/// a slot and throughput stays flat.
pub const EXPLORE_HEAD: &str = r#"
[plan]
name = "explore"
seed = 5

[endpoints.sim]
base_url = "sim://explore"

[endpoints.sim.sim]
ttft_base = "20ms"
itl_base = "4ms"
max_num_seqs = 8

[models.m]

[datasets.p]
kind = "prompt"
text = "hi"

[defaults]
output_tokens = 16
ignore_eos = true
"#;

pub fn perfplan(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .output()
        .unwrap()
}

/// `perfplan expand` of `text` written to `plan`: accepted when `said` is empty, else
/// refused with `said`, located in the plan; `what` names the case in a failure.
pub fn expands(plan: &Path, text: &str, said: &str, what: &str) {
    std::fs::write(plan, text).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    if said.is_empty() {
        assert!(o.status.success(), "{what}: {err}");
        return;
    }
    assert!(!o.status.success(), "{what}");
    let file = plan.file_name().unwrap().to_string_lossy();
    assert!(
        err.contains(said) && err.contains(&format!("{file}:")),
        "{what}: {err}"
    );
}

/// The binary's standard output; fails the test, with its stderr, when it does not succeed.
pub fn stdout_of(args: &[&str]) -> String {
    let out = perfplan(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a plan into `out` and returns the database path.
pub fn run(plan: &Path, out: &Path) -> PathBuf {
    run_with(plan, out, &[]).0
}

/// `run` with `extra` arguments: the database path and what the run said on stderr.
pub fn run_with(plan: &Path, out: &Path, extra: &[&str]) -> (PathBuf, String) {
    let args = [
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ][..],
        extra,
    ]
    .concat();
    let o = perfplan(&args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "perfplan run failed: {stderr}");
    assert!(!stderr.contains("failed:"), "{stderr}");
    (out.join("results.db"), stderr)
}

/// `perfplan compare BASE NEW MORE…`, a client-bound verdict accepted on both sides: for
/// tests of what compare judges (settings, noise), not of trust, whose runs a busy test
/// machine (two cores shared with builds) can make client-bound.
pub fn compare_accepting_client_bound(
    base: &Path,
    new: &Path,
    more: &[&str],
) -> std::process::Output {
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let args = [
        &["compare", base, new, "--accept", "client_bound"][..],
        more,
    ]
    .concat();
    perfplan(&args)
}

/// Holds a run's verdict `valid` but for the machine: a test of what the server did (an
/// honest server, no leak) on two cores shared with builds and the binary's other tests
/// may see the client judged late (`client_bound`, the client's health, not the server's);
/// any other reason fails.
pub fn assert_valid_but_for_the_machine(verdict: &Value) {
    let reasons = verdict["reasons"].as_array().cloned().unwrap_or_default();
    let others: Vec<&Value> = reasons
        .iter()
        .filter(|r| r["code"] != "client_bound")
        .collect();
    assert!(
        verdict["status"] == "valid" || (!reasons.is_empty() && others.is_empty()),
        "{verdict}"
    );
}

pub fn report_json(db: &Path) -> Vec<Value> {
    let o = perfplan(&["report", db.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

pub fn query<T: rusqlite::types::FromSql>(db: &Path, sql: &str) -> Vec<Vec<Option<T>>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// `cmd` to run as an unprivileged user (nobody) when the tests run as root, so that
/// file permissions apply to it; `dir` (which it may write) is handed to that user.
pub fn unprivileged(cmd: Command, dir: &Path) -> Command {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // A new file is owned by the user this test runs as.
    let probe = dir.join("uid-probe");
    let _ = std::fs::remove_file(&probe);
    std::fs::write(&probe, "").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(&probe).unwrap();
    if uid != 0 {
        return cmd;
    }
    let status = Command::new("chown")
        .args(["-R", "65534:65534", dir.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success(), "chown {}", dir.display());
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut wrapped = Command::new("setpriv");
    wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    wrapped.arg(cmd.get_program()).args(cmd.get_args());
    wrapped
}

/// `perfplan sim` in a process of its own, started with `args` after `sim --port 0`;
/// killed when dropped.
pub struct SimProcess {
    pub child: std::process::Child,
    /// Its base URL (`http://127.0.0.1:PORT`), from its `listening on` line.
    pub url: String,
}

impl SimProcess {
    pub fn start(args: &[&str]) -> SimProcess {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(env!("CARGO_BIN_EXE_perfplan"))
            .args(["sim", "--port", "0"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("not a listening line: {line:?}"))
            .to_string();
        SimProcess { child, url }
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
