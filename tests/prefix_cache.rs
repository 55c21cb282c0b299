//! Prefix-cache comparisons through the binary: servers launched by the plan, the on/off
//! scenario, the cold-run leak warning and its cure, `perfplan check` against an
//! xLLM-like simulator, and a launched server killed mid-suite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod cli_support;

use cli_support::SimProcess;
use perfplan::store::{RunStatus, ServerPhase, Store, StoredRun};

const BIN: &str = env!("CARGO_BIN_EXE_perfplan");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn perfplan(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("perfplan runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn runs(dir: &Path) -> Vec<StoredRun> {
    Store::open(dir).unwrap().runs().unwrap()
}

fn metric(run: &StoredRun, name: &str) -> Option<f64> {
    run.metrics.get(name).copied().flatten()
}

fn find<'a>(runs: &'a [StoredRun], endpoint: &str, state: &str) -> &'a StoredRun {
    runs.iter()
        .find(|r| r.axes["endpoint"] == endpoint && r.axes["cache_state"] == state)
        .unwrap()
}

#[test]
fn on_off_scenario_runs_from_one_command() {
    let out = tempfile::tempdir().unwrap();
    let plan = root().join("scenarios/prefix-cache-sim.toml");
    let o = perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(out.path().join("servers/cache-on.log").is_file());
    let all = runs(out.path());
    assert_eq!(all.len(), 4);
    let share = 0.5;
    // The planned hit ratio as the server sees the prompts: a cold run's 11 later requests
    // share the 512-token prefix (the template's opening inside it), the first shares
    // nothing; a warm run's priming pass sent every prompt before, cached in whole blocks
    // of the simulator's 16 tokens (its `vllm:cache_config_info`) within all but the last
    // token: 1,008 of 1,024.
    let cold_share = 11.0 * 512.0 / (12.0 * 1024.0);
    let warm_share = 1008.0 / 1024.0;
    for r in &all {
        assert_eq!(r.status, RunStatus::Done, "{r:?}");
        let planned = metric(r, "planned_prefix_share").unwrap();
        let template = metric(r, "planned_template_share").unwrap();
        match r.axes["cache_state"].as_str() {
            Some("cold") => assert!((planned - cold_share).abs() < 1e-9, "{planned}"),
            _ => assert_eq!(planned, warm_share),
        }
        assert!(template > 0.0 && template < 0.05, "{template}");
        assert!(
            r.warnings
                .iter()
                .map(ToString::to_string)
                .all(|w| !w.starts_with("cache_setting") && !w.starts_with("cache_shortfall")),
            "{r:?}"
        );
        let (usage, counters) = (
            metric(r, "cache_hit_ratio").unwrap(),
            metric(r, "server_cache_hit_ratio").unwrap(),
        );
        assert!((usage - counters).abs() < 0.02, "{usage} vs {counters}");
        assert!(
            r.warnings
                .iter()
                .all(|w| w.code != perfplan::trust::Code::CacheLeak),
            "{r:?}"
        );
    }
    let on_cold = find(&all, "cache-on", "cold");
    let on_warm = find(&all, "cache-on", "warm");
    let off_warm = find(&all, "cache-off", "warm");
    let cold_hits = metric(on_cold, "cache_hit_ratio").unwrap();
    assert!(
        cold_hits > share * 0.7 && cold_hits <= share + 0.02,
        "{cold_hits}"
    );
    assert!(metric(on_warm, "cache_hit_ratio").unwrap() >= share);
    assert_eq!(metric(off_warm, "cache_hit_ratio"), Some(0.0));
    assert_eq!(metric(off_warm, "server_cache_hit_ratio"), Some(0.0));
    let ttft = |r: &StoredRun| metric(r, "ttft_p50").unwrap();
    assert!(
        ttft(on_warm) < ttft(off_warm),
        "{} vs {}",
        ttft(on_warm),
        ttft(off_warm)
    );
    assert!(ttft(on_cold) < ttft(find(&all, "cache-off", "cold")));
    let store = Store::open(out.path()).unwrap();
    assert!(!store
        .server_metrics(&on_cold.id, ServerPhase::After)
        .unwrap()
        .is_empty());
}

fn leak_plan(dir: &Path, url: &str, reset: &str) -> PathBuf {
    let path = dir.join("leak.toml");
    let plan = format!(
        r#"[plan]
name = "leak"
[endpoints.srv]
base_url = "{url}"
reset_cache = "POST /reset_prefix_cache"
{reset}
[models.smollm2]
tokenizer = "{}"
[datasets.r]
kind = "random"
input_tokens = 256
prefix_tokens = 64
[defaults]
output_tokens = 4
ignore_eos = true
[matrix]
load = [{{ concurrency = 2, requests = 6, warmup = 2 }}]
"#,
        root().join("tests/fixtures/smollm2").display()
    );
    std::fs::write(&path, plan).unwrap();
    path
}

fn leak_warnings(plan: &Path, out: &Path) -> Vec<String> {
    let o = perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    runs(out)
        .into_iter()
        .flat_map(|r| r.warnings)
        .map(|w| w.to_string())
        .filter(|w| w.starts_with("cache_leak"))
        .collect()
}

#[test]
fn second_suite_without_reset_warns_of_the_leak() {
    let sim = SimProcess::start(&["--ttft-base", "1ms", "--itl-base", "1ms"]);
    let dir = tempfile::tempdir().unwrap();
    let plan = leak_plan(dir.path(), &sim.url, "");
    assert!(leak_warnings(&plan, &dir.path().join("a")).is_empty());
    let second = leak_warnings(&plan, &dir.path().join("b"));
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(second[0].contains("reset_cache_before = \"each_run\""));
    assert!(second[0].contains("prompt tokens cached"), "{}", second[0]);
}

#[test]
fn reset_before_each_run_keeps_cold_runs_cold() {
    let sim = SimProcess::start(&["--ttft-base", "1ms", "--itl-base", "1ms"]);
    let dir = tempfile::tempdir().unwrap();
    let plan = leak_plan(dir.path(), &sim.url, "reset_cache_before = \"each_run\"");
    assert!(leak_warnings(&plan, &dir.path().join("a")).is_empty());
    assert!(leak_warnings(&plan, &dir.path().join("b")).is_empty());
}

#[test]
fn check_reports_what_an_xllm_like_server_gets_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("xllm.toml");
    let plan = format!(
        r#"[plan]
name = "xllm"
[endpoints.xllm]
base_url = "http://127.0.0.1:{{port}}"
launch = "perfplan sim --port {{port}} --model qwen --reject-field seed --omit-cached-tokens --ttft-base 1ms --itl-base 1ms"
[models.qwen]
tokenizer = "{}"
[datasets.r]
kind = "random"
input_tokens = 64
[defaults]
output_tokens = 8
seed = 1
temperature = 0.0
[matrix]
tokenize_prompt = [false, true]
load = {{ concurrency = 1, requests = 4, warmup = 1 }}
"#,
        root().join("tests/fixtures/smollm2").display()
    );
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        path.to_str().unwrap(),
        "--check",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        !out.join("results.db").exists(),
        "run --check ran after a failed check"
    );
    let o = perfplan(&["check", path.to_str().unwrap()]);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(3), "{all}");
    assert!(all.contains("1 warnings, 1 failed"), "{all}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let flat: String = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("seed"), "{stdout}");
    assert!(flat.contains("reject_fields"), "{stdout}");
    assert!(flat.contains("cached_tokens"), "{stdout}");
}

#[test]
fn killed_server_fails_its_runs_and_the_suite_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kill.toml");
    let launch = "perfplan sim --port {port} --ttft-base 60ms --itl-base 1ms";
    let plan = format!(
        r#"[plan]
name = "kill"
[endpoints.a]
base_url = "http://127.0.0.1:{{port}}"
launch = "{launch}"
[endpoints.b]
base_url = "http://127.0.0.1:{{port}}"
launch = "{launch}"
[models.m]
[datasets.p]
kind = "prompt"
text = "hello there"
[defaults]
output_tokens = 4
ignore_eos = true
[matrix]
endpoint = ["a", "b"]
load = [
  {{ concurrency = 1, requests = 6, warmup = 0 }},
  {{ concurrency = 1, requests = 7, warmup = 0 }},
  {{ concurrency = 1, requests = 8, warmup = 0 }},
]
"#
    );
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    let mut child = Command::new(BIN)
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pgid = None;
    let mut killed = false;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if pgid.is_none() && line.contains("endpoint `a`: launched") {
            let pid = line.split("(pid ").nth(1).unwrap().split(',').next();
            pgid = pid.map(str::to_string);
        }
        if !killed && line.starts_with("run 1/6") && line.contains(" ok,") {
            let group = format!("-{}", pgid.clone().unwrap());
            Command::new("kill")
                .args(["-s", "KILL", "--", &group])
                .status()
                .unwrap();
            killed = true;
        }
    }
    let status = child.wait().unwrap();
    assert!(killed);
    assert_eq!(status.code(), Some(4));
    let all = runs(&out);
    let of = |e: &'static str| all.iter().filter(move |r| r.axes["endpoint"] == e);
    assert_eq!(of("a").filter(|r| r.status == RunStatus::Done).count(), 1);
    for r in of("a").filter(|r| r.status != RunStatus::Done) {
        assert_eq!(r.status, RunStatus::Failed);
        let e = r.error.as_deref().unwrap();
        assert!(e.contains("listening on http://127.0.0.1"), "{e}");
    }
    assert!(of("b").all(|r| r.status == RunStatus::Done));
}

#[test]
fn a_server_that_exits_at_launch_fails_its_runs_with_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.toml");
    let plan = r#"[plan]
name = "dead"
[endpoints.dead]
base_url = "http://127.0.0.1:{port}"
launch = "echo cannot load the weights; exit 3"
[endpoints.ok]
base_url = "sim://ok"
[models.m]
[datasets.p]
kind = "prompt"
text = "hi"
[defaults]
output_tokens = 2
[matrix]
endpoint = ["dead", "ok"]
load = [{ concurrency = 1, requests = 2, warmup = 1 }, { concurrency = 2, requests = 2, warmup = 2 }]
"#;
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let all = runs(&out);
    for r in all.iter().filter(|r| r.axes["endpoint"] == "dead") {
        assert_eq!(r.status, RunStatus::Failed);
        let e = r.error.as_deref().unwrap();
        assert!(
            e.contains("exit code 3") && e.contains("cannot load the weights"),
            "{e}"
        );
    }
    assert!(all
        .iter()
        .filter(|r| r.axes["endpoint"] == "ok")
        .all(|r| r.status == RunStatus::Done));
}

/// A plan's one cold run against `url`, with prefix caching labelled on.
fn cold_plan(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("cold.toml");
    let plan = format!(
        r#"[plan]
name = "cold"
seed = 5
[endpoints.srv]
base_url = "{url}"
prefix_cache = "on"
[models.smollm2]
tokenizer = "{}"
[datasets.r]
kind = "random"
input_tokens = 512
prefix_tokens = 128
[defaults]
output_tokens = 4
ignore_eos = true
[matrix]
cache_state = "cold"
load = [{{ concurrency = 2, requests = 8, warmup = 2 }}]
# The simulator shares the test machine: a late send is not what these tests judge.
[trust]
accept = ["client_bound"]
"#,
        root().join("tests/fixtures/smollm2").display()
    );
    std::fs::write(&path, plan).unwrap();
    path
}

fn verdict_codes(run: &StoredRun) -> Vec<String> {
    run.verdict
        .weighing()
        .iter()
        .map(|r| r.code.as_str().to_string())
        .collect()
}

#[test]
fn a_cold_rerun_with_the_same_seed_is_invalid_and_compare_does_not_judge_it() {
    // Prefill slow enough that a cached prefix shows in TTFT.
    let sim = SimProcess::start(&[
        "--ttft-base",
        "5ms",
        "--itl-base",
        "1ms",
        "--prefill-tokens-per-s",
        "20000",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let plan = cold_plan(dir.path(), &sim.url);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for out in [&a, &b] {
        let o = perfplan(&[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let first = &runs(&a)[0];
    assert_eq!(
        first.verdict.status.as_str(),
        "valid",
        "{:?}",
        first.verdict
    );
    let again = &runs(&b)[0];
    assert_eq!(
        again.verdict.status.as_str(),
        "invalid",
        "{:?}",
        again.verdict
    );
    assert!(verdict_codes(again).contains(&"cache_leak".to_string()));
    let advice = &again.verdict.reasons[0].text;
    assert!(advice.contains("--set plan.seed=N"), "{advice}");
    // The leak made TTFT faster; compare must not call that an improvement.
    let o = perfplan(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--metrics",
        "ttft_p50,output_tokens_mean",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains("better (beyond noise)"), "{out}");
    assert!(
        out.contains("not judged (new invalid: cache_leak)"),
        "{out}"
    );
    assert!(out.contains("valid · invalid"), "{out}");
    // A gate on the leaked run fails whatever its value, named apart (exit 12).
    let o = perfplan(&["report", b.to_str().unwrap(), "--gate", "ttft_p50=<= 10s"]);
    assert_eq!(o.status.code(), Some(12), "{}", text(&o));
    let o = perfplan(&[
        "report",
        b.to_str().unwrap(),
        "--gate",
        "ttft_p50=<= 10s",
        "--accept",
        "cache_leak",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn check_never_warms_the_prefix_a_cold_run_then_measures() {
    let sim = SimProcess::start(&["--ttft-base", "1ms", "--itl-base", "1ms"]);
    let dir = tempfile::tempdir().unwrap();
    let plan = cold_plan(dir.path(), &sim.url);
    let o = perfplan(&["check", plan.to_str().unwrap()]);
    assert!(o.status.code() == Some(0), "{}", text(&o));
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = &runs(&out)[0];
    assert!(
        !verdict_codes(run).contains(&"cache_leak".to_string()),
        "check warmed the cold run's prefix: {:?}",
        run.verdict
    );
    assert_eq!(run.verdict.status.as_str(), "valid", "{:?}", run.verdict);
}
