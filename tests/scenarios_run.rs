//! Every file in scenarios/ runs against the simulator: real-server endpoints are pointed
//! at a simulator in this process with `--set`, loads are shrunk, and the suite must
//! finish with every run done.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use perfplan::plan::{load_plan, LoadOptions};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::store::{RunStatus, Store};
use perfplan::units::HumanDuration;

fn test_env(name: &str) -> Option<String> {
    (name == "TOKENIZER_PATH").then(|| "../tests/fixtures/smollm2".to_string())
}

fn overrides(path: &Path, sim_url: &str) -> Vec<String> {
    let plan = load_plan(path, &LoadOptions::new(Vec::new(), &test_env))
        .unwrap_or_else(|r| panic!("{}", r.render()));
    let mut sets = vec!["defaults.output_tokens=4".to_string()];
    for (name, ep) in &plan.spec.endpoints {
        if !ep.base_url.starts_with("sim://") && ep.launch.is_none() {
            sets.push(format!("endpoints.{name}.base_url={sim_url}"));
        }
    }
    let fixed_loads = plan.spec.matrix.axes.iter().any(|(k, values)| {
        k == "load"
            && values
                .iter()
                .all(|v| v.get("concurrency").is_some() || v.get("rate").is_some())
    });
    let searches = plan
        .spec
        .matrix
        .axes
        .iter()
        .any(|(k, values)| k == "load" && values.iter().any(|v| v.get("search").is_some()));
    // A scenario of repeats keeps two of them, so that its groups are run and reported.
    let repeats = plan
        .spec
        .matrix
        .axes
        .iter()
        .any(|(k, values)| k == "load" && values.iter().any(|v| v.get("repeat").is_some()));
    if fixed_loads && repeats {
        sets.push(
            "matrix.load=[{ concurrency = 2, requests = 4, warmup = 2, repeat = 2 }]".to_string(),
        );
    } else if fixed_loads {
        sets.push("matrix.load=[{ concurrency = 2, requests = 4, warmup = 2 }]".to_string());
    } else if searches {
        sets.push(
            "matrix.load=[{ search = \"concurrency\", slo = { success_ratio = \">= 0.5\" }, min = 1, max = 2, requests_per_step = 4 }]".to_string(),
        );
    }
    sets
}

/// A scenario with relative gates is run as a release sign-off is: the previous release
/// first (its relative gate made absolute), then this one against it. The baseline's
/// folder, for such a scenario.
fn baseline_for(path: &Path, url: &str, root: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(path).unwrap();
    if !text.contains("\">= -5%\"") {
        return None;
    }
    let out = root.join(format!("{}-baseline", path.file_stem()?.to_str()?));
    let mut cmd = run_command(path, url, &out);
    cmd.args(["--set", "gates.output_tps=>= 0"]);
    let o = cmd.output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0) | Some(1) | Some(12)),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_against_the_simulator() {
    let config = SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(2)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    };
    let sim = SimServer::start(config).await.unwrap();
    let out_root = tempfile::tempdir().unwrap();
    let mut scenarios: Vec<_> = std::fs::read_dir("scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    scenarios.sort();
    // Two at a time (most of a scenario's time is its runs' waiting): each a process of
    // its own with its own folder; the simulator is shared, as a server is.
    let url = sim.base_url();
    let root = out_root.path().to_path_buf();
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let mine: Vec<PathBuf> = scenarios.iter().skip(w).step_by(2).cloned().collect();
            let (url, root) = (url.clone(), root.clone());
            tokio::task::spawn_blocking(move || {
                mine.iter().for_each(|p| run_scenario(p, &url, &root))
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    sim.shutdown().await;
}

/// Runs one scenario (after its baseline, if it has relative gates) against the
/// simulator at `url`; every run must end done.
fn run_scenario(path: &Path, url: &str, out_root: &Path) {
    let out = out_root.join(path.file_stem().unwrap());
    let mut cmd = run_command(path, url, &out);
    if let Some(baseline) = baseline_for(path, url, out_root) {
        cmd.args(["--baseline", baseline.to_str().unwrap()]);
    }
    let result = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    // Gates may fail against a simulator (exit 1), or meet a run judged invalid on a
    // loaded test machine or beside another scenario's load (exit 12); anything else is
    // a broken scenario.
    assert!(
        matches!(result.status.code(), Some(0) | Some(1) | Some(12)),
        "{}: {stderr}",
        path.display()
    );
    let runs = Store::open(&out).unwrap().runs().unwrap();
    assert!(!runs.is_empty(), "{}", path.display());
    for run in runs {
        assert_eq!(
            run.status,
            RunStatus::Done,
            "{} run {}: {:?} {stderr}",
            path.display(),
            run.ordinal,
            run.error
        );
    }
}

/// `perfplan run` of a scenario into `out`, its real servers pointed at `url` and its
/// load shrunk (`overrides`).
fn run_command(path: &Path, url: &str, out: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.arg("run").arg(path).arg("--out").arg(out);
    cmd.env("TOKENIZER_PATH", "../tests/fixtures/smollm2");
    for set in overrides(path, url) {
        cmd.args(["--set", &set]);
    }
    cmd
}
