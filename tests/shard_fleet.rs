//! Shards as an engine starts them (issue 18): `--shard auto` from a Kubernetes Indexed
//! Job's or a Slurm step's variables, every shard of one suite sharing one `--out DIR`
//! (`DIR/shard-K-of-N`), `perfplan merge OUT DIR`, and the refusals that name what
//! differs. Through the binary against a simulator in the test process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use perfplan::store::Store;
use perfplan::units::HumanDuration;

/// Every variable `--shard auto` and the barrier read, so the test's own environment
/// (a CI job under Slurm) does not leak in.
const ENGINE_VARS: &[&str] = &[
    "JOB_COMPLETION_INDEX",
    "PERFPLAN_SHARDS",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_JOB_NODELIST",
    "SLURM_STEP_NODELIST",
    "PERFPLAN_BARRIER",
];

fn command(args: &[&str], env: &[(&str, String)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    c.args(args);
    for v in ENGINE_VARS {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn perfplan(args: &[&str], env: &[(&str, String)]) -> Output {
    command(args, env).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn write_plan(dir: &Path, base_url: &str, seed: u64, load: &str) -> PathBuf {
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    let text = format!(
        r#"
[plan]
name = "fleet-test"
seed = {seed}

[endpoints.sim]
base_url = "{base_url}"

[models.m]
served_name = "smollm2"
tokenizer = "{tok}"

[datasets.rand]
kind = "random"
input_tokens = 32

[defaults]
output_tokens = 4
ignore_eos = true

[matrix]
load = {load}
"#,
        tok = tok.display()
    );
    let path = dir.join(format!("plan-{seed}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

async fn sim() -> SimServer {
    SimServer::start(SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(5)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

/// Both shards of a plan at once, as an Indexed Job's pods (index 0 and 1 of
/// PERFPLAN_SHARDS = 2), sharing `out`; `extra` is added to each command line.
fn run_indexed(plan: &Path, out: &Path, extra: &[&str]) {
    let children: Vec<_> = (0..2)
        .map(|i| {
            let mut args = vec!["run", s(plan), "--shard", "auto", "--out", s(out)];
            args.extend(extra);
            let env = [
                ("JOB_COMPLETION_INDEX", i.to_string()),
                ("PERFPLAN_SHARDS", "2".to_string()),
            ];
            command(&args, &env).spawn().unwrap()
        })
        .collect();
    for child in children {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_shards_share_one_out_and_merge_takes_the_folder() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(
        dir.path(),
        &sim.base_url(),
        5,
        "{ concurrency = 2, requests = 6 }",
    );
    let out = dir.path().join("results");
    run_indexed(&plan, &out, &[]);
    for k in 1..=2 {
        let own = out.join(format!("shard-{k}-of-2"));
        let store = Store::open(&own).unwrap();
        assert_eq!(store.suite_shard().unwrap(), Some(format!("{k}/2")));
    }
    let merged = dir.path().join("merged");
    let o = perfplan(&["merge", s(&merged), s(&out)], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("merged 2 shard databases"),
        "{}",
        stderr(&o)
    );
    let store = Store::open(&merged).unwrap();
    let run = &store.runs().unwrap()[0];
    assert_eq!(run.metrics["requests_ok"], Some(6.0));
    assert_eq!(run.extras["shards"], serde_json::json!(["1/2", "2/2"]));
    sim.shutdown().await;
}

#[test]
fn auto_without_an_engine_says_which_variables_it_reads() {
    let o = perfplan(&["run", "nowhere.toml", "--shard", "auto"], &[]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("JOB_COMPLETION_INDEX") && e.contains("SLURM_PROCID"),
        "{e}"
    );
    let env = [("JOB_COMPLETION_INDEX", "0".to_string())];
    let o = perfplan(&["run", "nowhere.toml", "--shard", "auto"], &env);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("PERFPLAN_SHARDS is not"),
        "{}",
        stderr(&o)
    );
    let dir = tempfile::tempdir().unwrap();
    let o = perfplan(&["merge", s(&dir.path().join("m")), s(dir.path())], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no shard-K-of-N folder"),
        "{}",
        stderr(&o)
    );
}

/// Shards of one plan text whose seed or perfplan version differ are refused, the
/// difference named with both values.
#[test]
fn merge_refuses_shards_of_another_seed_or_version_naming_both_values() {
    use perfplan::store::SuiteInfo;
    let dir = tempfile::tempdir().unwrap();
    let shard = |name: &str, k: u32, edit: &dyn Fn(&mut SuiteInfo)| {
        let path = dir.path().join(name);
        let mut info = SuiteInfo::new("fleet-test", "[plan]\nname = \"fleet-test\"\n");
        info.seed = 5;
        edit(&mut info);
        let mut store = Store::create(&path, &info).unwrap();
        store.mark_shard(&format!("{k}/2")).unwrap();
        path
    };
    let one = shard("one", 1, &|_| {});
    let seed = shard("seed", 2, &|i| i.seed = 6);
    let version = shard("version", 2, &|i| i.perfplan_version = "0.0.9".into());
    let o = perfplan(
        &["merge", s(&dir.path().join("m1")), s(&one), s(&seed)],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the seed differs (6 there, 5 here)"),
        "{}",
        stderr(&o)
    );
    let o = perfplan(
        &["merge", s(&dir.path().join("m2")), s(&one), s(&version)],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the perfplan version differs (0.0.9 there"),
        "{}",
        stderr(&o)
    );
}
