//! `perfplan init`: every template is written, validates and runs against the simulator
//! (real-server endpoints pointed at a test simulator with `--set`, loads shrunk); files
//! are never overwritten without `--force`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use perfplan::plan::{load_plan, LoadOptions};
use perfplan::store::{RunStatus, Store};

const TEMPLATES: [&str; 7] = [
    "quickstart",
    "cache-on-off",
    "tokenize-prompt",
    "xllm-llm",
    "vlm-images",
    "sla-search",
    "release-signoff",
];

fn perfplan(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn shard(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flickr8k/test-000000.tar");
    std::fs::copy(src, dir.join("test-000000.tar")).unwrap();
}

/// `--set` overrides that point real servers at the simulator and shrink the loads.
fn overrides(plan: &Path, env: &[(&str, String)], sim: &str) -> Vec<String> {
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let loaded = load_plan(plan, &LoadOptions::new(Vec::new(), &lookup))
        .unwrap_or_else(|r| panic!("{}: {}", plan.display(), r.render()));
    let mut sets = vec!["defaults.output_tokens=4".to_string()];
    for (name, ep) in &loaded.spec.endpoints {
        if !ep.base_url.starts_with("sim://") {
            sets.push(format!("endpoints.{name}.base_url={sim}"));
        }
    }
    let search = loaded
        .spec
        .matrix
        .axes
        .iter()
        .any(|(k, v)| k == "load" && v.iter().any(|l| l.get("search").is_some()));
    sets.push(if search {
        "matrix.load=[{ search = \"concurrency\", slo = { success_ratio = \">= 0.5\" }, min = 1, max = 2, requests_per_step = 4 }]".to_string()
    } else {
        "matrix.load=[{ concurrency = 2, requests = 4, warmup = 2 }]".to_string()
    });
    if loaded
        .spec
        .matrix
        .axes
        .iter()
        .any(|(k, _)| k == "input_tokens")
    {
        sets.push("matrix.input_tokens=[64]".to_string());
    }
    sets
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_template_validates_and_runs_against_the_simulator() {
    let sim = perfplan::sim::SimServer::start(perfplan::sim::SimConfig::default())
        .await
        .unwrap();
    let url = sim.base_url();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        shard(&root.join("shards"));
        let env = vec![
            (
                "TOKENIZER_PATH",
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/smollm2")
                    .display()
                    .to_string(),
            ),
            ("FLICKR8K_PATH", root.join("shards").display().to_string()),
        ];
        for name in TEMPLATES {
            let file = root.join(format!("{name}.toml"));
            let out = perfplan(&["init", name, "--out", file.to_str().unwrap()], &env);
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(text.starts_with("#:schema "), "{name}");
            let out_dir = root.join(format!("out-{name}"));
            let mut args = vec![
                "run".to_string(),
                file.display().to_string(),
                "--out".into(),
                out_dir.display().to_string(),
            ];
            for set in overrides(&file, &env, &url) {
                args.extend(["--set".to_string(), set]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = perfplan(&args, &env);
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(
                matches!(run.status.code(), Some(0) | Some(1)),
                "{name}: {stderr}"
            );
            let runs = Store::open(&out_dir).unwrap().runs().unwrap();
            assert!(!runs.is_empty(), "{name}");
            for r in runs {
                assert_eq!(
                    r.status,
                    RunStatus::Done,
                    "{name} run {}: {:?} {stderr}",
                    r.ordinal,
                    r.error
                );
            }
        }
    })
    .await
    .unwrap();
    sim.shutdown().await;
}

#[test]
fn init_lists_defaults_to_quickstart_and_never_overwrites() {
    let list = perfplan(&["init", "--list"], &[]);
    let text = String::from_utf8_lossy(&list.stdout);
    for name in TEMPLATES {
        assert!(text.contains(name), "{text}");
    }
    let out = perfplan(&["init"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("name = \"quickstart\""));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plan.toml");
    std::fs::write(&file, "mine").unwrap();
    let again = perfplan(&["init", "xllm-llm", "--out", file.to_str().unwrap()], &[]);
    assert_eq!(again.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&again.stderr)
        .contains("already exists; nothing written (--force overwrites it)"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let forced = perfplan(
        &[
            "init",
            "xllm-llm",
            "--out",
            file.to_str().unwrap(),
            "--force",
        ],
        &[],
    );
    assert!(forced.status.success());
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("name = \"xllm-llm\""));
    let unknown = perfplan(&["init", "nope"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr)
        .contains("unknown template `nope`; the templates are quickstart"));
}
