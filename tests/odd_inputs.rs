//! Odd inputs read right, bad ones named: a UTF-8 byte-order mark is skipped and CRLF
//! read as LF in every text input (plans, datasets, traces, prompt files, tokenizer
//! configs); a NUL or other control character in a prompt is a located warning; a
//! trace's zero or negative timestamps and impossible dates are located errors; a
//! corrupt image is a located error; a plan or endpoint name that would leave the
//! output folder is refused with the rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use perfplan::sim::{SimConfig, SimServer};

const BOM: &str = "\u{feff}";

fn perfplan(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn crlf(text: &str) -> String {
    format!("{BOM}{}", text.replace('\n', "\r\n"))
}

fn head(base_url: &str) -> String {
    format!(
        "[plan]\nname = \"odd\"\n[endpoints.server]\nbase_url = \"{base_url}\"\n[models.m]\n\
         [defaults]\noutput_tokens = 2\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bom_and_crlf_are_read_as_plain_text_everywhere() {
    let sim = SimServer::start(SimConfig::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("q.jsonl"),
        crlf("{\"prompt\": \"first\"}\n{\"prompt\": \"second\"}\n"),
    )
    .unwrap();
    std::fs::write(d.join("l.txt"), crlf("one\ntwo\n")).unwrap();
    std::fs::write(d.join("p.txt"), crlf("line1\nline2\n")).unwrap();
    let trace = "{\"timestamp\": 1700000000.0, \"body\": {\"model\": \"m\", \"max_tokens\": 2, \
                 \"messages\": [{\"role\": \"user\", \"content\": \"traced\"}]}}\n";
    std::fs::write(d.join("t.jsonl"), crlf(trace)).unwrap();
    let plan = head(&sim.base_url())
        + "[datasets.q]\nkind = \"jsonl\"\npath = \"q.jsonl\"\n\
           [datasets.l]\nkind = \"lines\"\npath = \"l.txt\"\n\
           [datasets.p]\nkind = \"prompt\"\ntext = \"@p.txt\"\n\
           [datasets.t]\nkind = \"trace\"\npath = \"t.jsonl\"\n\
           [matrix]\ndataset = [\"q\", \"l\", \"p\"]\nload = { concurrency = 1, requests = 2, warmup = 1 }\n\
           include = [{ dataset = \"t\", load = { requests = 1 } }]\n";
    std::fs::write(d.join("plan.toml"), crlf(&plan)).unwrap();
    let out = perfplan(d, &["run", "plan.toml", "--out", "results"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let texts: Vec<String> = sim
        .received()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body.to_string())
        .collect();
    let all = texts.join("\n");
    for expected in ["first", "second", "one", "two", "line1\\nline2", "traced"] {
        assert!(all.contains(expected), "{expected} not sent: {all}");
    }
    assert!(
        !all.contains("\\r") && !all.contains('\u{feff}') && !all.contains("\\ufeff"),
        "{all}"
    );
    sim.shutdown().await;
}

#[test]
fn a_tokenizer_config_with_a_bom_loads_and_counts_the_same() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    let dir = tempfile::tempdir().unwrap();
    for name in ["tokenizer.json", "tokenizer_config.json"] {
        let text = std::fs::read_to_string(fixture.join(name)).unwrap();
        std::fs::write(dir.path().join(name), format!("{BOM}{text}")).unwrap();
    }
    let plain = perfplan::tokenize::Tokenizer::load(&fixture).unwrap();
    let bom = perfplan::tokenize::Tokenizer::load(dir.path())
        .unwrap_or_else(|e| panic!("{}", perfplan::control::chain(&e)));
    let text = "How many tokens is this sentence?";
    assert_eq!(
        bom.count(text, false).unwrap(),
        plain.count(text, false).unwrap()
    );
}

#[test]
fn control_characters_in_prompts_are_located_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("l.txt"),
        "fine\nhello\0world\nescape \u{1b}[31m red\n",
    )
    .unwrap();
    let plan = head("http://127.0.0.1:9")
        + "[datasets.l]\nkind = \"lines\"\npath = \"l.txt\"\n[matrix]\nload = { concurrency = 1, requests = 3, warmup = 1 }\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = perfplan(d, &["validate", "plan.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "warnings, not errors: {stderr}");
    assert!(
        stderr.contains("warning: dataset `l`: l.txt:2: the prompt holds a control character (NUL at character 6)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("l.txt:3: the prompt holds a control character (U+001B"),
        "{stderr}"
    );
}

#[test]
fn a_traces_impossible_timestamps_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let body = r#""body": {"model": "m", "prompt": "x"}"#;
    let lines = [
        format!(r#"{{"timestamp": 1700000000.5, {body}}}"#),
        format!(r#"{{"timestamp": -5, {body}}}"#),
        format!(r#"{{"timestamp": 0, {body}}}"#),
        format!(r#"{{"timestamp": "2025-02-30T00:00:00Z", {body}}}"#),
        format!(r#"{{"timestamp": 1e30, {body}}}"#),
        format!(r#"{{"timestamp": "1969-12-31T23:59:59Z", {body}}}"#),
    ];
    std::fs::write(d.join("t.jsonl"), lines.join("\n") + "\n").unwrap();
    let plan = head("http://127.0.0.1:9") + "[datasets.t]\nkind = \"trace\"\npath = \"t.jsonl\"\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = perfplan(d, &["validate", "plan.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for (line, what) in [
        (2, "`timestamp` -5 is not after 1970-01-01"),
        (3, "`timestamp` 0 is not after 1970-01-01"),
        (4, "is not ISO-8601"),
        (5, "is after the year 9999"),
        (6, "is not after 1970-01-01"),
    ] {
        assert!(
            stderr.contains(&format!("t.jsonl:{line}: ")),
            "line {line}: {stderr}"
        );
        let at = stderr.find(&format!("t.jsonl:{line}: ")).unwrap();
        assert!(
            stderr[at..].lines().next().unwrap().contains(what),
            "{line}: {stderr}"
        );
    }
    assert!(!stderr.contains("t.jsonl:1:"), "{stderr}");
}

#[test]
fn a_corrupt_image_is_a_located_error() {
    use perfplan::dataset::image_codec::{encode, pixels, ImageFormat};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("imgs")).unwrap();
    let png = encode(ImageFormat::Png, 8, 8, &pixels(8, 8, 1)).unwrap();
    std::fs::write(d.join("imgs/a.png"), &png).unwrap();
    std::fs::write(d.join("imgs/b.png"), b"this is not a picture").unwrap();
    std::fs::write(d.join("imgs/c.png"), &png[..png.len() / 2]).unwrap();
    let plan = head("http://127.0.0.1:9")
        + "[datasets.i]\nkind = \"images\"\npath = \"imgs\"\n[matrix]\nload = { concurrency = 1, requests = 2, warmup = 1 }\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = perfplan(d, &["validate", "plan.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("imgs/b.png: a corrupt image: not a PNG image"),
        "{stderr}"
    );
    assert!(
        stderr.contains("imgs/c.png: a corrupt image: a PNG image cut short"),
        "{stderr}"
    );
    assert!(!stderr.contains("a.png"), "{stderr}");
}

#[test]
fn names_that_would_leave_the_output_folder_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan =
        "[plan]\nname = \"../../x\"\n[endpoints.\"a/b\"]\nbase_url = \"http://127.0.0.1:9\"\n\
                [models.m]\n[datasets.p]\nkind = \"prompt\"\ntext = \"hi\"\n\
                [matrix]\nload = { concurrency = 1, requests = 1 }\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = perfplan(d, &["validate", "plan.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("plan name \"../../x\" cannot name its output folder"),
        "{stderr}"
    );
    assert!(
        stderr.contains("endpoint name \"a/b\" cannot name its server log"),
        "{stderr}"
    );
    assert!(
        stderr.contains("may not be empty, `.` or `..`, or hold `/`"),
        "{stderr}"
    );
    let out = perfplan(d, &["run", "plan.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!d.join("x").exists() && !d.join("outputs").exists());
}
