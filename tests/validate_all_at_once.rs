//! `perfplan validate` reports every problem of a plan in one pass: a plan with a
//! mistake of each phase (a duration, an unknown key, a range, a reference, a gate's
//! metric, a file, and a planner rule) gets all seven in one run, each located, and
//! no problem that is only a consequence of another.

use std::process::Command;

const PLAN: &str = r#"
[plan]
name = "seven"
pause_between_runs = "5 parsecs"

[endpoints.server]
base_url = "http://127.0.0.1:9"

[models.m]
served_name = "m"

[datasets.questions]
kind = "jsonl"
path = "missing.jsonl"

[defaults]
output_tokens = 64
temprature = 0.5

[matrix]
endpoint = ["server", "srever"]
load = [{ concurrency = 0, requests = 8 }, { concurrency = 2, requests = 8 }]
temperature = [0.5, 0.50]

[gates]
ttft_p98 = "<= 2s"
"#;

#[test]
fn one_validate_reports_a_mistake_of_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seven.toml");
    std::fs::write(&path, PLAN).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = [
        ("invalid duration `5 parsecs`", "seven.toml:4:"),
        ("unknown key `temprature` in `defaults`", "seven.toml:18:"),
        (
            "value 0 out of range in `matrix.load[0].concurrency`",
            "seven.toml:22:",
        ),
        ("`srever` is not a defined endpoint", "seven.toml:21:"),
        ("unknown metric `ttft_p98` in [gates]", "seven.toml:26:"),
        (
            "dataset file `missing.jsonl` does not exist",
            "seven.toml:14:",
        ),
        ("`temperature` lists 0.5 twice", "seven.toml:23:"),
    ];
    for (message, place) in expected {
        let at = stderr
            .find(message)
            .unwrap_or_else(|| panic!("`{message}` missing:\n{stderr}"));
        let located = stderr[at..].lines().nth(1).unwrap_or_default();
        assert!(
            located.contains(place),
            "`{message}` not at {place}: {located}\n{stderr}"
        );
    }
    assert_eq!(stderr.matches("error:").count(), expected.len(), "{stderr}");
    assert!(stderr.contains("7 errors in the plan"), "{stderr}");
}

/// A problem that is a consequence of a value already reported (a load table left out
/// leaves the matrix without a load) is not reported again.
#[test]
fn consequences_of_a_faulty_value_are_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.toml");
    std::fs::write(
        &path,
        r#"
[plan]
name = "one"
[endpoints.server]
base_url = "http://127.0.0.1:9"
[models.m]
[datasets.d]
kind = "prompt"
text = "hi"
[matrix]
load = [{ concurrency = 0, requests = 8 }]
"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert!(stderr.contains("out of range"), "{stderr}");
}
