//! `perfplan import evalscope`: the two scripts of xLLM's guide (tests/fixtures/evalscope,
//! as the guide prints them) are executed with a recorder for `evalscope`, and the plans
//! they import expand to the scripts' tiers and settings; the LLM one then runs against
//! the simulator in two commands, as the README and the book show.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

const LLM: &str = "tests/fixtures/evalscope/eval_llm_performance.sh";
const VLM: &str = "tests/fixtures/evalscope/eval_vlm_performance.sh";

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

/// `perfplan ARGS` in `dir` with `env` added to the caller's environment.
fn perfplan(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.current_dir(dir).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    for k in [
        "HOST",
        "PORT",
        "MODEL",
        "INPUT_TOKENS",
        "PREFIX_TOKENS",
        "OUTPUT_TOKENS",
        "TOKENIZE_PROMPT",
        "RUN_DIR",
    ] {
        if !env.iter().any(|(e, _)| *e == k) {
            cmd.env_remove(k);
        }
    }
    cmd.output().unwrap()
}

/// Imports `script` under `env` into `dir/plan.toml` and returns `expand --json`.
fn import(dir: &Path, script: &str, env: &[(&str, &str)]) -> Vec<Value> {
    let out = perfplan(
        dir,
        &["import", "evalscope", "--from-script", &fixture(script)],
        env,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("does not validate"), "{stderr}");
    std::fs::write(dir.join("plan.toml"), &out.stdout).unwrap();
    let expanded = perfplan(dir, &["expand", "--json", "plan.toml"], env);
    assert!(
        expanded.status.success(),
        "{}",
        String::from_utf8_lossy(&expanded.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&expanded.stdout).unwrap()
}

/// The script's three closed-loop tiers: `--parallel 1 4 8 --number 64 128 256 --warmup-num 8`.
fn assert_tiers(runs: &[Value]) {
    let tiers: Vec<Value> = runs.iter().map(|r| r["settings"]["load"].clone()).collect();
    assert_eq!(
        tiers,
        vec![
            json!({"concurrency": 1, "requests": 64, "warmup": 8}),
            json!({"concurrency": 4, "requests": 128, "warmup": 8}),
            json!({"concurrency": 8, "requests": 256, "warmup": 8}),
        ]
    );
}

fn tokenizer() -> String {
    fixture("tests/fixtures/smollm2")
}

#[test]
fn the_llm_script_imports_its_tiers_and_settings() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let runs = import(dir.path(), LLM, &[("TOKENIZER_PATH", &tok)]);
    assert_tiers(&runs);
    for run in &runs {
        let s = &run["settings"];
        assert_eq!(s["endpoint"]["base_url"], "http://127.0.0.1:18000");
        assert_eq!(s["endpoint"]["api_key_env"], "API_KEY");
        assert_eq!(s["api"], "chat");
        assert_eq!(s["tokenize_prompt"], false);
        assert_eq!(s["model"]["served_name"], "Qwen3-8B");
        assert_eq!(s["model"]["tokenizer"], tok.as_str());
        assert_eq!(
            s["dataset"],
            json!({"name": "random", "kind": "random", "input_tokens": 1024})
        );
        assert_eq!(
            s["request"],
            json!({"output_tokens": 256, "temperature": 0.0, "stream": true, "ignore_eos": true})
        );
    }
    // The script ran in the caller's folder, as `bash script` would: its mkdir happened.
    assert!(dir.path().join("outputs/performance").is_dir());
    let plan = std::fs::read_to_string(dir.path().join("plan.toml")).unwrap();
    assert!(
        plan.contains("`--outputs-dir`: no equivalent, because"),
        "{plan}"
    );
}

#[test]
fn the_llm_script_variables_change_the_plan_as_they_change_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let env = [
        ("TOKENIZER_PATH", tok.as_str()),
        ("INPUT_TOKENS", "2048"),
        ("PREFIX_TOKENS", "512"),
        ("OUTPUT_TOKENS", "128"),
        ("TOKENIZE_PROMPT", "true"),
        ("HOST", "10.1.2.3"),
        ("PORT", "9000"),
        ("MODEL", "Qwen3-32B"),
    ];
    let runs = import(dir.path(), LLM, &env);
    assert_tiers(&runs);
    let s = &runs[0]["settings"];
    // $((INPUT_TOKENS - PREFIX_TOKENS)) random tokens after a 512-token prefix: 2048 in all.
    assert_eq!(s["dataset"]["input_tokens"], 2048);
    assert_eq!(s["dataset"]["prefix_tokens"], 512);
    assert_eq!(s["request"]["output_tokens"], 128);
    // The `if` chose the completions URL and --tokenize-prompt.
    assert_eq!(s["api"], "completions");
    assert_eq!(s["tokenize_prompt"], true);
    assert_eq!(s["endpoint"]["base_url"], "http://10.1.2.3:9000");
    assert_eq!(s["model"]["served_name"], "Qwen3-32B");
}

#[test]
fn a_failing_script_is_reported_with_its_own_message() {
    let dir = tempfile::tempdir().unwrap();
    // ${TOKENIZER_PATH:?…} stops the script before evalscope is called.
    let out = perfplan(
        dir.path(),
        &["import", "evalscope", "--from-script", &fixture(LLM)],
        &[],
    );
    assert_eq!(out.status.code(), Some(10));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Set TOKENIZER_PATH"), "{stderr}");
    assert!(
        stderr.contains("exited with status 1 after recording 0"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    let tok = tokenizer();
    let bad = [
        ("TOKENIZER_PATH", tok.as_str()),
        ("TOKENIZE_PROMPT", "maybe"),
    ];
    let out = perfplan(
        dir.path(),
        &["import", "evalscope", "--from-script", &fixture(LLM)],
        &bad,
    );
    assert_eq!(out.status.code(), Some(10));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TOKENIZE_PROMPT must be true or false"));
}

fn write_shard(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut b = tar::Builder::new(std::fs::File::create(dir.join("test-000000.tar")).unwrap());
    for (name, data) in [
        ("0.jpg", &b"\xff\xd8\xff\xe0fake"[..]),
        ("0.txt", b"a caption"),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, data).unwrap();
    }
    b.finish().unwrap();
}

#[test]
fn the_vlm_script_imports_an_images_dataset_of_tar_shards() {
    let dir = tempfile::tempdir().unwrap();
    let shards = dir.path().join("wds_flickr8k");
    write_shard(&shards);
    let path = shards.display().to_string();
    let runs = import(dir.path(), VLM, &[("FLICKR8K_PATH", &path)]);
    assert_tiers(&runs);
    let s = &runs[0]["settings"];
    assert_eq!(
        s["dataset"],
        json!({"name": "flickr8k", "kind": "images", "path": path})
    );
    assert_eq!(s["model"]["served_name"], "Qwen3-VL-8B-Instruct");
    assert_eq!(
        s["request"],
        json!({"output_tokens": 256, "temperature": 0.0, "stream": true, "ignore_eos": true})
    );
    // Without the variable the plan is still written, with a warning saying what it needs.
    let out = perfplan(
        dir.path(),
        &["import", "evalscope", "--from-script", &fixture(VLM)],
        &[],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not validate on this machine yet"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("path = \"${FLICKR8K_PATH}\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_then_run_is_two_commands() {
    let sim = perfplan::sim::SimServer::start(perfplan::sim::SimConfig::default())
        .await
        .unwrap();
    let port = sim.base_url().rsplit(':').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let tok = tokenizer();
        let env = [
            ("TOKENIZER_PATH", tok.as_str()),
            ("PORT", port.as_str()),
            ("INPUT_TOKENS", "64"),
            ("OUTPUT_TOKENS", "4"),
        ];
        import(&d, LLM, &env);
        perfplan(&d, &["run", "plan.toml", "--out", "out"], &[])
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("3 runs done, 0 skipped, 0 failed"),
        "{stderr}"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("concurrency=8"), "{table}");
    sim.shutdown().await;
}

#[test]
fn the_imported_llm_plan_reads_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("TOKENIZER_PATH", "/models/Qwen3-8B")];
    let out = perfplan(
        dir.path(),
        &["import", "evalscope", "--from-script", &fixture(LLM)],
        &env,
    );
    assert!(out.status.success());
    // The tokenizer is not on this machine: the plan is written, with a warning.
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokenizer"));
    let text = String::from_utf8_lossy(&out.stdout).replace(env!("CARGO_MANIFEST_DIR"), "[repo]");
    insta::assert_snapshot!("xllm_llm_plan", text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_line_with_a_query_template_imports_and_runs() {
    let sim = perfplan::sim::SimServer::start(perfplan::sim::SimConfig::default())
        .await
        .unwrap();
    let url = sim.base_url();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        std::fs::write(d.join("q.jsonl"), "{\"question\": \"What is a lighthouse?\"}\n{\"question\": \"Why is the sea salty?\"}\n").unwrap();
        // The reference's custom request body example, with a local openqa file.
        let args = [
            "import", "evalscope", "--out", "plan.toml", "--", "perf",
            "--url", "http://127.0.0.1:8000/v1/chat/completions", "--parallel", "2", "--model", "qwen2.5",
            "--log-every-n-query", "10", "--read-timeout", "120", "--connect-timeout", "120", "--number", "6",
            "--max-prompt-length", "128000", "--min-prompt-length", "1", "--api", "openai", "--max-tokens", "4",
            "--query-template",
            r#"{"model": "%m", "messages": [{"role": "user","content": "%p"}], "stream": true, "skip_special_tokens": false, "stop": ["<|im_end|>"], "temperature": 0.7, "max_tokens": 1024}"#,
            "--dataset", "openqa", "--dataset-path", "q.jsonl",
        ];
        let out = perfplan(&d, &args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("does not validate"), "{stderr}");
        assert!(stderr.contains("`--log-every-n-query`: no equivalent, because"), "{stderr}");
        let plan = std::fs::read_to_string(d.join("plan.toml")).unwrap();
        assert!(plan.contains("timeouts = { connect = \"120s\", read = \"120s\" }"), "{plan}");
        let set = format!("endpoints.server.base_url={url}");
        let run = perfplan(&d, &["run", "plan.toml", "--out", "out", "--set", &set, "--set", "plan.store={ bodies = true }"], &[]);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let shown = perfplan(&d, &["show", "out"], &[]);
        let shown = String::from_utf8_lossy(&shown.stdout);
        // The template's own fields, the command line's over them (temperature 0, 4 tokens).
        assert!(shown.contains("\"skip_special_tokens\": false"), "{shown}");
        assert!(shown.contains("\"temperature\": 0.0"), "{shown}");
        assert!(shown.contains("\"max_tokens\": 4"), "{shown}");
        assert!(shown.contains("\"model\": \"qwen2.5\""), "{shown}");
        assert!(shown.contains("lighthouse") || shown.contains("salty"), "{shown}");
    })
    .await
    .unwrap();
    sim.shutdown().await;
}
