//! Secrets stay secret, wherever the plan put them: a canary secret written as a literal
//! header value in the plan, in an imported file and in a `--set` is sent to the server
//! but found in no file perfplan writes (the whole output folder, the database's bytes
//! included) and in nothing it prints. `rerun` names the variables it needs, takes the
//! values from them, and works from another working directory (relative dataset and
//! import paths resolve against the plan's own folder).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use perfplan::sim::{SimConfig, SimServer};

const CANARY: &str = "CANARY";
const IN_PLAN: &str = "Bearer CANARY-plan-5a7c9e1f";
const IN_IMPORT: &str = "CANARY-import-3b8d0a42";
const IN_SET: &str = "CANARY-set-9f1e6c20";

fn perfplan(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.current_dir(cwd).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    for text in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(text);
        assert!(
            !text.contains(CANARY),
            "perfplan {args:?} printed a secret:\n{text}"
        );
    }
    out
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn assert_no_canary_in(dir: &Path) {
    let files = files_under(dir);
    assert!(files.iter().any(|f| f.ends_with("results.db")), "{files:?}");
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let found = bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes());
        assert!(!found, "{} holds a secret", file.display());
    }
}

fn write_plan(root: &Path, base_url: &str) {
    std::fs::create_dir_all(root.join("plans/common")).unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::create_dir_all(root.join("elsewhere")).unwrap();
    std::fs::write(root.join("data/prompts.txt"), "hello\nhow are you\n").unwrap();
    let plan = format!(
        r#"imports = ["common/endpoints.toml"]

[plan]
name = "canary"
seed = 1

[endpoints.a]
base_url = "{base_url}"
headers = {{ Authorization = "{IN_PLAN}", X-Trace = "on" }}

[models.m]

[datasets.d]
kind = "lines"
path = "../data/prompts.txt"

[defaults]
output_tokens = 4

[matrix]
endpoint = ["a", "b"]
load = {{ concurrency = 1, requests = 3 }}
"#
    );
    std::fs::write(root.join("plans/plan.toml"), plan).unwrap();
    let import = format!(
        "[endpoints.b]\nbase_url = \"{base_url}\"\nheaders = {{ \"X-Api-Key\" = \"{IN_IMPORT}\" }}\n"
    );
    std::fs::write(root.join("plans/common/endpoints.toml"), import).unwrap();
}

/// Header names the server received (values are redacted by the simulator itself).
fn received_headers(sim: &SimServer) -> Vec<String> {
    sim.received()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .flat_map(|r| r.headers.iter().map(|(n, _)| n.to_ascii_lowercase()))
        .collect()
}

#[test]
fn a_canary_secret_reaches_the_server_and_no_file() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt.block_on(SimServer::start(SimConfig::default())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_plan(root, &sim.base_url());
    let set = format!("endpoints.a.headers.x-auth-token={IN_SET}");

    let v = perfplan(root, &["validate", "plans/plan.toml", "--set", &set], &[]);
    let stderr = String::from_utf8_lossy(&v.stderr);
    assert!(v.status.success(), "{stderr}");
    for needle in [
        "header `Authorization` of endpoint `a` holds a literal secret",
        "Authorization = \"${PERFPLAN_SECRET_A_AUTHORIZATION}\"",
        "header `X-Api-Key` of endpoint `b`",
        "header `x-auth-token` of endpoint `a`",
    ] {
        assert!(stderr.contains(needle), "{needle} missing:\n{stderr}");
    }
    perfplan(root, &["expand", "plans/plan.toml", "--set", &set], &[]);
    perfplan(
        root,
        &["expand", "plans/plan.toml", "--set", &set, "--json"],
        &[],
    );

    let out = root.join("out");
    let o = perfplan(
        root,
        &[
            "run",
            "plans/plan.toml",
            "--set",
            &set,
            "--debug",
            "--progress-json",
            "out/progress.jsonl",
            "--out",
            "out",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sent = received_headers(&sim);
    for name in ["authorization", "x-api-key", "x-auth-token", "x-trace"] {
        assert!(sent.iter().any(|n| n == name), "{name} not sent: {sent:?}");
    }
    for format in ["md", "json", "csv", "html"] {
        let file = format!("out/report-again.{format}");
        perfplan(
            root,
            &["report", "out", "--format", format, "--out", &file],
            &[],
        );
    }
    perfplan(
        root,
        &[
            "compare",
            "out",
            "out",
            "--out",
            "out/compare.md",
            "--format",
            "md",
        ],
        &[],
    );
    assert_no_canary_in(&out);

    // From another folder: without the values, rerun names what it needs.
    let elsewhere = root.join("elsewhere");
    let r = perfplan(
        &elsewhere,
        &["rerun", out.to_str().unwrap(), "--out", "again"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    for needle in [
        "header `Authorization` of endpoint `a`: set PERFPLAN_SECRET_A_AUTHORIZATION",
        "header `X-Api-Key` of endpoint `b`: set PERFPLAN_SECRET_B_X_API_KEY",
        "header `x-auth-token` of endpoint `a`: set PERFPLAN_SECRET_A_X_AUTH_TOKEN",
    ] {
        assert!(stderr.contains(needle), "{needle} missing:\n{stderr}");
    }
    // With them, it runs the same plan (its dataset and import found from there).
    let before = sim.received().len();
    let env = [
        ("PERFPLAN_SECRET_A_AUTHORIZATION", IN_PLAN),
        ("PERFPLAN_SECRET_B_X_API_KEY", IN_IMPORT),
        ("PERFPLAN_SECRET_A_X_AUTH_TOKEN", IN_SET),
    ];
    let r = perfplan(
        &elsewhere,
        &["rerun", out.to_str().unwrap(), "--out", "again"],
        &env,
    );
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(!stderr.contains("resolve to other settings"), "{stderr}");
    let again: Vec<_> = sim.received().into_iter().skip(before).collect();
    assert_eq!(
        again
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .count(),
        6
    );
    assert_no_canary_in(&elsewhere.join("again"));
    rt.block_on(sim.shutdown());
}

/// `expand --json` prints a run's settings by the rule the store keeps them by: a
/// secret-looking body field (`[defaults] extra`) is hidden in both, not only in the
/// database. The canary is a literal of the plan, so it is not a header `validate` warns of.
#[test]
fn expand_hides_what_the_store_hides() {
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        r#"[plan]
name = "extra-secret"

[endpoints.a]
base_url = "http://127.0.0.1:9"
headers = {{ X-Trace = "on" }}

[models.m]

[datasets.d]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 4
extra = {{ api_key = "{IN_SET}", priority = 1 }}

[matrix]
load = {{ concurrency = 1, requests = 1 }}
"#
    );
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    let out = perfplan(dir.path(), &["expand", "plan.toml", "--json"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let extra = &runs[0]["settings"]["request"]["extra"];
    assert_eq!(extra["api_key"], "<redacted>", "{extra}");
    assert_eq!(extra["priority"], 1, "{extra}");
    assert_eq!(runs[0]["settings"]["endpoint"]["headers"]["X-Trace"], "on");
}

/// A failed run's stored error hides the secrets its printed line hides: a launched
/// server that prints its API key and exits leaves the key in its own log only, never in
/// the results database or `perfplan.log`.
#[test]
fn a_failed_runs_stored_error_hides_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let plan = r#"[plan]
name = "echoed-key"

[endpoints.a]
base_url = "http://127.0.0.1:{port}"
api_key_env = "ECHOED_KEY"
launch = "echo serving with api_key=$ECHOED_KEY; exit 3"

[models.m]

[datasets.d]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 4

[matrix]
load = { concurrency = 1, requests = 1 }
"#;
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    let o = perfplan(
        dir.path(),
        &["run", "plan.toml", "--out", "out"],
        &[("ECHOED_KEY", IN_SET)],
    );
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let store = perfplan::store::Store::open(&dir.path().join("out")).unwrap();
    let runs = store.runs().unwrap();
    let error = runs[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("api_key=<redacted>"), "{error}");
    let log = std::fs::read_to_string(dir.path().join("out/perfplan.log")).unwrap();
    assert!(!log.contains(CANARY) && !error.contains(CANARY), "{log}");
}
