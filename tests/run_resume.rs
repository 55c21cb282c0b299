//! A suite killed with SIGKILL mid-way and continued with `--resume`: finished runs are not
//! repeated, the interrupted one is rerun from scratch, and the database holds exactly
//! one complete set of rows per run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use perfplan::sim::{SimConfig, SimServer};
use perfplan::store::{RunStatus, Store};
use perfplan::units::HumanDuration;

const PER_RUN: usize = 21; // 20 measured + 1 warmup

fn plan(base_url: &str) -> String {
    format!(
        r#"
[plan]
name = "resume"
[endpoints.sim]
base_url = "{base_url}"
[models.m]
[datasets.d]
kind = "prompt"
text = "hello there"
[defaults]
output_tokens = 20
ignore_eos = true
[matrix]
load = [
  {{ concurrency = 1, requests = 20, warmup = 1 }},
  {{ concurrency = 1, requests = 20, warmup = 1, duration = "1h" }},
  {{ concurrency = 1, requests = 20, warmup = 1, duration = "2h" }},
]
"#
    )
}

fn done_runs(dir: &std::path::Path) -> usize {
    let Ok(store) = Store::open(dir) else {
        return 0;
    };
    store
        .runs()
        .map(|runs| runs.iter().filter(|r| r.status == RunStatus::Done).count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_then_resume_finishes_without_repeating_runs() {
    let config = SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(5)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    };
    let sim = SimServer::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("p.toml");
    std::fs::write(&plan_path, plan(&sim.base_url())).unwrap();
    let out = dir.path().join("out");
    let bin = env!("CARGO_BIN_EXE_perfplan");
    let mut child = Command::new(bin)
        .args([
            "run",
            plan_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while done_runs(&out) < 1 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "first run never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(150)); // into the second run
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let done_before = done_runs(&out);
    assert!(done_before < 3, "killed before the end");
    let sent_before = sim
        .received()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();

    let resumed = Command::new(bin)
        .args([
            "run",
            plan_path.to_str().unwrap(),
            "--resume",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        stderr.contains("done in an earlier attempt, skipped"),
        "{stderr}"
    );
    let sent_after = sim
        .received()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    assert_eq!(
        sent_after - sent_before,
        (3 - done_before) * PER_RUN,
        "only unfinished runs are sent again"
    );

    let store = Store::open(&out).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 3);
    for run in &runs {
        assert_eq!(run.status, RunStatus::Done);
        let rows = store.request_rows(&run.id).unwrap();
        assert_eq!(
            rows.len(),
            PER_RUN,
            "run {} holds exactly one complete attempt",
            run.ordinal
        );
        let mut idx: Vec<u64> = rows.iter().map(|r| r.index).collect();
        idx.sort_unstable();
        idx.dedup();
        assert_eq!(idx.len(), PER_RUN);
    }
    sim.shutdown().await;
}

/// `--resume` continues the stored suite only with the plan it ran: another seed (by
/// `--set`) or another file is refused before anything is sent, naming the setting.
#[test]
fn resume_refuses_a_different_plan_naming_the_first_difference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        format!(
            "{}\n[endpoints.sim.sim]\nttft_base = \"1ms\"\nitl_base = \"1ms\"\n",
            plan("sim://sim")
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let bin = env!("CARGO_BIN_EXE_perfplan");
    let run = |args: &[&str]| Command::new(bin).args(args).output().unwrap();
    let p = path.to_str().unwrap();
    let o = run(&[
        "run",
        p,
        "--out",
        out.to_str().unwrap(),
        "--only",
        "load=c=1 n=20",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&[
        "run",
        p,
        "--resume",
        out.to_str().unwrap(),
        "--set",
        "plan.seed=7",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`plan.seed` was 0, is 7"), "{err}");
    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("hello there", "bye"),
    )
    .unwrap();
    let o = run(&["run", p, "--resume", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("datasets.d.text"), "{err}");
    let runs = Store::open(&out).unwrap().runs().unwrap();
    assert_eq!(runs.len(), 1, "no run of another plan was added");
    // The same plan resumes.
    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("bye", "hello there"),
    )
    .unwrap();
    let o = run(&["run", p, "--resume", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(done_runs(&out), 3);
}
