//! `perfplan run --url … --concurrency 1,4,8`: a plan-free run against the simulator prints
//! the same kind of table as a plan run, stores into the same database, and its
//! `--save-plan` file expands to exactly the runs it ran.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use perfplan::store::Store;

fn perfplan(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_run_saves_the_plan_it_ran() {
    let sim = perfplan::sim::SimServer::start(perfplan::sim::SimConfig::default())
        .await
        .unwrap();
    let url = format!("{}/v1/chat/completions", sim.base_url());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    tokio::task::spawn_blocking(move || {
        let out = perfplan(
            &d,
            &[
                "run",
                "--url",
                &url,
                "--model",
                "m",
                "--concurrency",
                "1,4,8",
                "--requests",
                "8,8,16",
                "--input-tokens",
                "32",
                "--tokenizer",
                tok.to_str().unwrap(),
                "--output-tokens",
                "4",
                "--save-plan",
                "saved/plan.toml",
                "--out",
                "out",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("3 runs done, 0 skipped, 0 failed"),
            "{stderr}"
        );
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(table.contains("suite quick — 3 runs"), "{table}");
        for tier in ["concurrency=1", "concurrency=4", "concurrency=8"] {
            assert!(table.contains(tier), "{table}");
        }
        assert!(table.contains("ttft_p50 (ms)"), "{table}");
        let stored: Vec<String> = Store::open(&d.join("out"))
            .unwrap()
            .runs()
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        let expanded = perfplan(&d, &["expand", "--json", "saved/plan.toml"]);
        assert!(
            expanded.status.success(),
            "{}",
            String::from_utf8_lossy(&expanded.stderr)
        );
        let runs: Vec<serde_json::Value> = serde_json::from_slice(&expanded.stdout).unwrap();
        let ids: Vec<String> = runs
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids, stored);
        assert_eq!(
            runs[2]["settings"]["load"],
            serde_json::json!({"concurrency": 8, "requests": 16, "warmup": 8})
        );
        assert_eq!(runs[0]["settings"]["dataset"]["input_tokens"], 32);
        // The saved plan is a plan like any other: a second run of it is the same suite.
        let again = perfplan(&d, &["run", "saved/plan.toml", "--out", "out2"]);
        assert!(
            again.status.success(),
            "{}",
            String::from_utf8_lossy(&again.stderr)
        );
        let ids2: Vec<String> = Store::open(&d.join("out2"))
            .unwrap()
            .runs()
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids2, stored);
        // --save-plan never writes over a file.
        let twice = perfplan(
            &d,
            &[
                "run",
                "--url",
                &url,
                "--model",
                "m",
                "--save-plan",
                "saved/plan.toml",
            ],
        );
        assert_eq!(twice.status.code(), Some(6));
    })
    .await
    .unwrap();
    sim.shutdown().await;
}

#[test]
fn quick_run_mistakes_name_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = perfplan(
        dir.path(),
        &[
            "run",
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--input-tokens",
            "64",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--input-tokens needs --tokenizer DIR"));
    let out = perfplan(
        dir.path(),
        &[
            "run",
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--concurrency",
            "1,4",
            "--requests",
            "8,8,8",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--requests has 3 values and --concurrency 2"));
    // Without --model, the server is asked for its models: one that is not there
    // cannot say, so --model is asked for (the server's own run is in connection_first.rs).
    let out = perfplan(dir.path(), &["run", "--url", "http://127.0.0.1:9"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --model"));
    assert!(!dir.path().join("outputs").exists());
}
