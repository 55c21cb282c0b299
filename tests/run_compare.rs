//! `perfplan compare` of real suites: the same plan against a simulator and against one
//! 20% slower flags TTFT and throughput beyond noise; a suite against itself, and an
//! unchanged suite run again, flag nothing (every metric "no change").

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;

fn plan(base_url: &str) -> String {
    format!(
        r#"
[plan]
name = "cmp"
[endpoints.sim]
base_url = "{base_url}"
[models.m]
[datasets.d]
kind = "prompt"
text = "compare me"
[defaults]
output_tokens = 16
ignore_eos = true
[matrix]
load = {{ concurrency = 8, requests = 64, warmup = 8 }}
[report]
metrics = ["ttft_p50", "ttft_p99", "tpot_mean", "latency_p50", "output_tps"]
"#
    )
}

async fn suite(dir: &Path, name: &str, slow: f64) -> String {
    let ms = |x: f64| HumanDuration(Duration::from_secs_f64(x / 1000.0));
    let config = SimConfig {
        ttft_base: ms(100.0 * slow),
        itl_base: ms(4.0 * slow),
        ..SimConfig::default()
    };
    let sim = SimServer::start(config).await.unwrap();
    let plan_path = dir.join(format!("{name}.toml"));
    std::fs::write(&plan_path, plan(&sim.base_url())).unwrap();
    let out = dir.join(name);
    let status = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args([
            "run",
            plan_path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    sim.shutdown().await;
    out.display().to_string()
}

fn compare(base: &str, new: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["compare", base, new, "--ignore", "endpoint"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slower_server_is_beyond_noise_and_a_suite_against_itself_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let fast = suite(dir.path(), "fast", 1.0).await;
    let slow = suite(dir.path(), "slow", 1.2).await;
    let text = compare(&fast, &slow);
    let line = |metric: &str| {
        text.lines()
            .find(|l| l.contains(metric))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("ttft_p50").contains("worse (beyond noise)"), "{text}");
    assert!(
        line("output_tps").contains("worse (beyond noise)"),
        "{text}"
    );
    let same = compare(&fast, &fast);
    assert!(!same.contains("beyond noise)"), "{same}");
    // The same plan against the same (fresh) simulator: what moves is the machine, which
    // the bootstrap of one run's requests cannot see; the minimum effect does.
    let again = suite(dir.path(), "again", 1.0).await;
    let rerun = compare(&fast, &again);
    let judged: Vec<&str> = rerun
        .lines()
        .filter(|l| l.contains(" (ms)") || l.contains("(tok/s)"))
        .collect();
    assert_eq!(judged.len(), 5, "{rerun}");
    assert!(judged.iter().all(|l| l.contains("no change")), "{rerun}");
    assert!(rerun.contains("beyond noise: 0 worse, 0 better"), "{rerun}");
}
