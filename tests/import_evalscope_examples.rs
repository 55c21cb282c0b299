//! `perfplan import evalscope` takes every `evalscope perf` example of EvalScope's own
//! usage guide (tests/fixtures/evalscope/evalscope-perf-examples.txt, a copy of
//! ../shared/reference/): each is run as a script (with `evalscope` recorded, as
//! `--from-script` does), the plan it imports is written with `--out`, and `perfplan
//! validate` accepts it once the files the example names exist, as a user of the
//! example would have them (a prompt file, a template, a long text, a trace, local
//! copies of the hub datasets and tokenizers).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

const EXAMPLES: &str = "tests/fixtures/evalscope/evalscope-perf-examples.txt";

/// Every ```bash block of the guide that is an `evalscope perf` command, as a script
/// (the guide's page is one line: its ` \ ` continuations become line breaks).
fn examples() -> Vec<String> {
    let text = std::fs::read_to_string(EXAMPLES).unwrap();
    text.split("```bash ")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .map(str::trim)
        .filter(|b| b.starts_with("evalscope perf"))
        .map(|b| b.replace(" \\ ", " \\\n") + "\n")
        .collect()
}

fn perfplan(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.current_dir(dir).args(args).envs(env.iter().cloned());
    cmd.output().unwrap()
}

/// The files the examples name, written into `dir`, and the variables naming local
/// copies of the hub datasets.
fn their_files(dir: &Path) -> Vec<(&'static str, String)> {
    let smollm2 = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    for hub in [
        "Qwen/Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-VL-3B-Instruct",
        "Qwen/Qwen3-Embedding-0.6B",
    ] {
        let target = dir.join(hub);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&smollm2, &target).unwrap();
    }
    std::fs::write(dir.join("prompt.txt"), "Write a short story.\n").unwrap();
    std::fs::write(
        dir.join("template.json"),
        r#"{"model": "%m", "messages": [{"role": "user", "content": "%p"}], "stream": true, "max_tokens": 1024}"#,
    )
    .unwrap();
    std::fs::write(dir.join("long_text.txt"), "A long text. ".repeat(200)).unwrap();
    let trace = [
        r#"{"body": {"model": "qwen-plus", "messages": [{"role": "user", "content": "hi"}]}, "timestamp": 1700000000.0}"#,
        r#"{"body": {"model": "gpt-4", "messages": [{"role": "user", "content": "a poem"}]}, "timestamp": 1700000001.5, "request_id": "req-42"}"#,
    ];
    std::fs::write(dir.join("trace.jsonl"), trace.join("\n") + "\n").unwrap();
    std::fs::write(
        dir.join("openqa.jsonl"),
        "{\"question\": \"What is a benchmark?\"}\n",
    )
    .unwrap();
    vec![
        (
            "OPENQA_PATH",
            dir.join("openqa.jsonl").display().to_string(),
        ),
        ("DASHSCOPE_API_KEY", "sk-example".to_string()),
    ]
}

#[test]
fn every_example_of_evalscopes_guide_imports_and_validates() {
    let examples = examples();
    assert_eq!(examples.len(), 19, "the guide's `evalscope perf` examples");
    let mut failures = Vec::new();
    for (i, example) in examples.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let env = their_files(dir.path());
        std::fs::write(dir.path().join("example.sh"), example).unwrap();
        let imported = perfplan(
            dir.path(),
            &[
                "import",
                "evalscope",
                "--from-script",
                "example.sh",
                "--out",
                "plan.toml",
            ],
            &env,
        );
        let stderr = String::from_utf8_lossy(&imported.stderr).to_string();
        if !imported.status.success() || stderr.contains("does not validate") {
            failures.push(format!(
                "example {}: import failed:\n{example}\n{stderr}",
                i + 1
            ));
            continue;
        }
        let valid = perfplan(dir.path(), &["validate", "plan.toml"], &env);
        if !valid.status.success() {
            failures.push(format!(
                "example {}: validate failed:\n{example}\n{}",
                i + 1,
                String::from_utf8_lossy(&valid.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A trace replay takes no `--model` (each record keeps its own), replays every record
/// without `--number` and the first N with it, and its plan reads EvalScope's summary.
#[test]
fn a_trace_replay_imports_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let env = their_files(dir.path());
    let out = perfplan(
        dir.path(),
        &[
            "import",
            "evalscope",
            "--",
            "--dataset",
            "workload_trace",
            "--dataset-path",
            "trace.jsonl",
            "--url",
            "http://127.0.0.1:8000/v1/chat/completions",
            "--open-loop",
            "--number",
            "1",
        ],
        &env,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(!plan.contains("served_name"), "{plan}");
    assert!(plan.contains("metrics = \"evalscope\""), "{plan}");
    assert!(stderr.contains("keeps its own `model`"), "{stderr}");
    std::fs::write(dir.path().join("plan.toml"), plan.as_bytes()).unwrap();
    let expanded = perfplan(dir.path(), &["expand", "--json", "plan.toml"], &env);
    let runs: Vec<serde_json::Value> = serde_json::from_slice(&expanded.stdout).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["settings"]["load"]["requests"], 1);
}

/// Warnings about a plan that does not validate here yet name the file it goes to:
/// `<stdout>`, or the `--out` file (not a `plan.toml` that does not exist).
#[test]
fn import_warnings_name_stdout_or_the_out_file() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "import",
        "evalscope",
        "--",
        "--model",
        "qwen2.5",
        "--url",
        "http://127.0.0.1:8000/v1/chat/completions",
        "--dataset",
        "openqa",
    ];
    let env = [("OPENQA_PATH", String::new())];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.current_dir(dir.path())
        .args(args)
        .env_remove("OPENQA_PATH");
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not validate"), "{stderr}");
    assert!(stderr.contains("<stdout>:"), "{stderr}");
    assert!(!stderr.contains("plan.toml"), "{stderr}");
    let mut with_out: Vec<&str> = args.to_vec();
    with_out.splice(2..2, ["--out", "mine.toml"]);
    let out = perfplan(dir.path(), &with_out, &env[..0]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mine.toml:"), "{stderr}");
}

/// `--sla-auto-tune` names each load flag of the command it leaves out.
#[test]
fn an_sla_auto_tune_notes_each_flag_it_ignores() {
    let dir = tempfile::tempdir().unwrap();
    let out = perfplan(
        dir.path(),
        &[
            "import",
            "evalscope",
            "--",
            "--model",
            "m",
            "--url",
            "http://127.0.0.1:8000/v1/chat/completions",
            "--dataset",
            "random",
            "--tokenizer-path",
            env!("CARGO_MANIFEST_DIR"),
            "--max-prompt-length",
            "64",
            "--min-prompt-length",
            "64",
            "--sla-auto-tune",
            "--sla-params",
            r#"[{"p99_latency": "<=2"}]"#,
            "--parallel",
            "4",
            "--number",
            "100",
            "--warmup-num",
            "4",
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for flag in ["--parallel", "--number", "--warmup-num"] {
        assert!(
            stderr.contains(&format!("`--sla-auto-tune`: `{flag}` is left out")),
            "{flag}: {stderr}"
        );
    }
    assert!(!stderr.contains("`--rate` is left out"), "{stderr}");
}
