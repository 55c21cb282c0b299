//! Everything checkable before the first request is checked before it: `run` opens every
//! dataset file its runs will use, parses every line, and stops with all the problems
//! located (file and line) before sending anything or making an output folder — a
//! suite whose *second* run reads a JSONL file with a bad line 4 sends no request at
//! all. `validate` says the same (unless `--no-files`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use perfplan::sim::{SimConfig, SimServer};

fn plan(base_url: &str) -> String {
    format!(
        r#"
[plan]
name = "files"
[endpoints.sim]
base_url = "{base_url}"
[models.m]
[datasets.good]
kind = "lines"
path = "good.txt"
[datasets.bad]
kind = "jsonl"
path = "bad.jsonl"
[defaults]
output_tokens = 4
[matrix]
dataset = ["good", "bad"]
load = {{ concurrency = 1, requests = 4 }}
"#
    )
}

fn write_files(dir: &Path, base_url: &str) {
    std::fs::write(dir.join("p.toml"), plan(base_url)).unwrap();
    std::fs::write(dir.join("good.txt"), "one\ntwo\nthree\n").unwrap();
    let lines = [
        r#"{"prompt": "first"}"#,
        r#"{"prompt": "second"}"#,
        r#"{"prompt": "third"}"#,
        r#"{"prompt": "fourth", oops}"#,
        r#"{"question": "fifth"}"#,
        r#"{"answer": "no prompt here"}"#,
    ];
    std::fs::write(dir.join("bad.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn perfplan(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_in_the_second_runs_file_stops_the_suite_before_any_request() {
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), &sim.base_url());
    let out = perfplan(dir.path(), &["run", "p.toml", "--out", "results"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.jsonl:4: malformed JSON"), "{stderr}");
    assert!(
        stderr.contains("bad.jsonl:6: no prompt found"),
        "every problem, not only the first: {stderr}"
    );
    assert!(stderr.contains("nothing was sent"), "{stderr}");
    assert!(sim.received().is_empty(), "{:?}", sim.received());
    assert!(
        !dir.path().join("results").exists(),
        "no output folder is left"
    );
    assert!(!dir.path().join("outputs").exists());
    sim.shutdown().await;
}

#[test]
fn validate_reads_the_files_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), "http://127.0.0.1:9");
    let out = perfplan(dir.path(), &["validate", "p.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("dataset `bad`: bad.jsonl:4: malformed JSON"),
        "{stderr}"
    );
    let out = perfplan(dir.path(), &["validate", "p.toml", "--no-files"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A good plan's files are counted.
    std::fs::write(
        dir.path().join("bad.jsonl"),
        "{\"prompt\": \"a\"}\n{\"question\": \"b\"}\n",
    )
    .unwrap();
    let out = perfplan(dir.path(), &["validate", "p.toml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("dataset `good`: good.txt: 3 usable"),
        "{stdout}"
    );
    assert!(
        stdout.contains("dataset `bad`: bad.jsonl: 2 usable"),
        "{stdout}"
    );
}

/// A plan whose second model's tokenizer is corrupt: found before any request.
fn plan_with_tokenizers(base_url: &str, good: &Path) -> String {
    format!(
        r#"
[plan]
name = "tokenizers"
[endpoints.sim]
base_url = "{base_url}"
[models.a]
served_name = "sim-model"
tokenizer = "{good}"
[models.b]
served_name = "sim-model"
tokenizer = "broken-tok"
[datasets.r]
kind = "random"
input_tokens = 32
[defaults]
output_tokens = 4
[matrix]
model = ["a", "b"]
load = {{ concurrency = 1, requests = 4 }}
"#,
        good = good.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_tokenizer_of_the_second_run_stops_the_suite_before_any_request() {
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let good = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    std::fs::write(
        dir.path().join("p.toml"),
        plan_with_tokenizers(&sim.base_url(), &good),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("broken-tok")).unwrap();
    std::fs::write(
        dir.path().join("broken-tok/tokenizer.json"),
        r#"{"version": "1.0", "truncation": nu"#,
    )
    .unwrap();
    let out = perfplan(dir.path(), &["validate", "p.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("model `b`: cannot load the tokenizer")
            && stderr.contains("broken-tok/tokenizer.json"),
        "{stderr}"
    );
    let out = perfplan(dir.path(), &["validate", "p.toml", "--no-files"]);
    assert_eq!(out.status.code(), Some(0));
    let out = perfplan(dir.path(), &["run", "p.toml", "--out", "results"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("model `b`"), "{stderr}");
    assert!(sim.received().is_empty(), "{:?}", sim.received());
    assert!(!dir.path().join("results").exists(), "no output folder");
    sim.shutdown().await;
}
