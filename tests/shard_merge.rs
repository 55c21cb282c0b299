//! `perfplan run --shard K/N --start-at` and `perfplan merge` through the binary against a
//! simulator in the test process: the shards together send exactly the plan's requests,
//! the merge holds every row once, one run per run id, and percentiles recomputed from
//! the union of the rows; merges of mismatched databases are refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use perfplan::metrics::percentile;
use perfplan::record::{Outcome, Phase};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::store::{RequestRow, Store, SuiteInfo};
use perfplan::units::HumanDuration;
use serde_json::Value;

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .output()
        .expect("run perfplan")
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn sim_config() -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(5)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    }
}

fn plan(base_url: &str, load: &str) -> String {
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    format!(
        r#"
[plan]
name = "shard-test"
seed = 5

[endpoints.sim]
base_url = "{base_url}"

[models.m]
served_name = "smollm2"
tokenizer = "{tok}"

[datasets.rand]
kind = "random"
input_tokens = 48
prefix_tokens = 8

[defaults]
output_tokens = 6
ignore_eos = true

[matrix]
load = {load}
"#,
        tok = tok.display()
    )
}

const LOADS: &str = r#"[
  { concurrency = 3, requests = 7, warmup = 3 },
  { rate = 40, requests = 6, arrivals = "constant" },
]"#;

fn write_plan(dir: &Path, base_url: &str, load: &str) -> PathBuf {
    let path = dir.join("p.toml");
    std::fs::write(&path, plan(base_url, load)).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn rows_of(store: &Store) -> Vec<(String, Vec<RequestRow>)> {
    store
        .runs()
        .unwrap()
        .into_iter()
        .map(|r| (r.id.clone(), store.request_rows(&r.id).unwrap()))
        .collect()
}

/// Milliseconds of every measured successful row, sorted: `f` gives the time from send.
fn sorted_ms(rows: &[&RequestRow], f: impl Fn(&RequestRow) -> Option<Duration>) -> Vec<f64> {
    let mut v: Vec<f64> = rows
        .iter()
        .filter(|r| r.phase == Phase::Measured && r.outcome == Outcome::Ok)
        .filter_map(|r| f(r))
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn ttft(r: &RequestRow) -> Option<Duration> {
    r.ttft()
}

fn latency(r: &RequestRow) -> Option<Duration> {
    Some(r.latency())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_merge_into_the_plans_runs_with_exact_percentiles() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = write_plan(dir.path(), &sim.base_url(), LOADS);
    let outs: Vec<PathBuf> = (1..=2).map(|k| dir.path().join(format!("s{k}"))).collect();
    let start_s = run_two_shards(&plan_path, &outs);
    // `--out DIR` of shard K/N holds its suite in DIR/shard-K-of-N.
    let outs: Vec<PathBuf> = outs
        .iter()
        .enumerate()
        .map(|(k, o)| o.join(format!("shard-{}-of-2", k + 1)))
        .collect();
    let received = sim
        .received()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    assert_eq!(received, 3 + 7 + 6, "warmup + measured of both runs, once");

    // Each shard: its share, its shard on every row, the first run not started early.
    let mut union: Vec<(String, RequestRow)> = Vec::new();
    for (k, out) in outs.iter().enumerate() {
        let store = Store::open(out).unwrap();
        let label = format!("{}/2", k + 1);
        assert_eq!(
            store.suite_shard().unwrap().as_deref(),
            Some(label.as_str())
        );
        let runs = store.runs().unwrap();
        let closed = &runs[0];
        let started = closed.facts.to_value()["measured_start_unix_us"]
            .as_u64()
            .unwrap();
        let first_sent = store
            .request_rows(&closed.id)
            .unwrap()
            .iter()
            .filter(|r| r.phase == Phase::Measured)
            .map(|r| started + r.sent.as_micros() as u64)
            .min()
            .unwrap();
        // `--start-at` holds the first run's load: no measured request goes out before it.
        assert!(
            first_sent as f64 >= start_s * 1e6 - 1_000.0,
            "sent before --start-at"
        );
        assert!(
            started as f64 >= start_s * 1e6 - 1_000.0,
            "started before --start-at"
        );
        for (id, rows) in rows_of(&store) {
            assert!(rows
                .iter()
                .all(|r| r.shard.as_deref() == Some(label.as_str())));
            union.extend(rows.into_iter().map(|r| (id.clone(), r)));
        }
    }
    // The shards split the plan's items: together every item once, none twice.
    for (id, n) in [(&union[0].0, 10), (&union.last().unwrap().0, 6)] {
        let mut items: Vec<u64> = union
            .iter()
            .filter(|(i, _)| i == id)
            .map(|(_, r)| r.item)
            .collect();
        items.sort_unstable();
        assert_eq!(items, (0..n).collect::<Vec<u64>>(), "run {id}");
    }
    let measured = |id: &str| {
        union
            .iter()
            .filter(|(i, r)| i == id && r.phase == Phase::Measured)
            .count()
    };

    let merged = dir.path().join("merged");
    let out = perfplan(&["merge", s(&merged), s(&outs[0]), s(&outs[1])]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&merged).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2, "one run per run id");
    let mut total = 0;
    for (run, want) in runs.iter().zip([7.0, 6.0]) {
        let rows = store.request_rows(&run.id).unwrap();
        total += rows.len();
        assert_eq!(measured(&run.id) as f64, want);
        assert_eq!(run.metrics["requests_ok"], Some(want));
        let facts = run.facts.to_value();
        assert_eq!(facts["shards"], serde_json::json!(["1/2", "2/2"]));
        // Input lengths over both shards' measured requests.
        let lengths = &facts["input_lengths"]["server_minus_client"];
        assert_eq!(lengths["requests"].as_f64(), Some(want), "{lengths}");
        let shards: Vec<_> = rows.iter().filter_map(|r| r.shard.clone()).collect();
        assert!(shards.contains(&"1/2".into()) && shards.contains(&"2/2".into()));
        // Percentiles of the merge = percentiles of the union of the shards' rows.
        let mine: Vec<&RequestRow> = union
            .iter()
            .filter(|(i, _)| *i == run.id)
            .map(|(_, r)| r)
            .collect();
        for (name, f) in [
            ("ttft", ttft as fn(&RequestRow) -> Option<Duration>),
            ("latency", latency),
        ] {
            let values = sorted_ms(&mine, f);
            assert_eq!(values.len() as f64, want);
            for (p, stat) in [(50.0, "p50"), (90.0, "p90"), (99.0, "p99"), (100.0, "max")] {
                let got = run.metrics[&format!("{name}_{stat}")].unwrap();
                let exact = percentile(&values, p).unwrap();
                assert!(
                    (got - exact).abs() < 1e-9,
                    "{name}_{stat}: {got} vs {exact}"
                );
            }
        }
    }
    assert_eq!(total, union.len());
    assert_eq!(total, received, "rows stored = requests the server saw");
    let report = perfplan(&["report", s(&merged), "--format", "json"]);
    assert!(report.status.success());
    let report: Vec<Value> = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report.len(), 2);
    assert_eq!(report[0]["metrics"]["requests_ok"], 7.0);
    assert_eq!(report[1]["metrics"]["requests_ok"], 6.0);
    let compare = perfplan(&["compare", s(&merged), s(&merged)]);
    assert!(
        compare.status.success(),
        "{}",
        String::from_utf8_lossy(&compare.stderr)
    );

    // Refusals: a shard twice, a missing or corrupt database, another plan, OUT exists.
    let again = dir.path().join("again");
    assert_eq!(
        code(&perfplan(&["merge", s(&again), s(&outs[0]), s(&outs[0])])),
        2
    );
    let missing = dir.path().join("nowhere");
    assert_eq!(
        code(&perfplan(&["merge", s(&again), s(&outs[0]), s(&missing)])),
        5
    );
    let corrupt = dir.path().join("corrupt.db");
    std::fs::write(
        &corrupt,
        b"this is not a database at all, not even close......",
    )
    .unwrap();
    assert_eq!(
        code(&perfplan(&["merge", s(&again), s(&outs[0]), s(&corrupt)])),
        5
    );
    let other = dir.path().join("other");
    let mut fake = Store::create(&other, &SuiteInfo::new("shard-test", "another plan")).unwrap();
    fake.mark_shard("2/2").unwrap();
    drop(fake);
    let out = perfplan(&["merge", s(&again), s(&outs[0]), s(&other)]);
    assert_eq!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("the plan (its text and imports, by sha256) differs"));
    assert_eq!(
        code(&perfplan(&["merge", s(&merged), s(&outs[0]), s(&outs[1])])),
        6
    );
    assert_eq!(
        code(&perfplan(&["merge", s(&again), s(&merged)])),
        2,
        "not a shard"
    );
    // A shard still running (one of its runs not finished) is merged with a warning.
    let running = dir.path().join("running");
    std::fs::create_dir_all(&running).unwrap();
    for entry in std::fs::read_dir(&outs[1]).unwrap() {
        let entry = entry.unwrap();
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("results.db")
        {
            std::fs::copy(entry.path(), running.join(entry.file_name())).unwrap();
        }
    }
    let first_run = Store::open(&running).unwrap().runs().unwrap()[0].id.clone();
    rusqlite::Connection::open(running.join("results.db"))
        .unwrap()
        .execute(
            "UPDATE runs SET status = 'running' WHERE id = ?1",
            [&first_run],
        )
        .unwrap();
    let out = perfplan(&["merge", s(&again), s(&outs[0]), s(&running)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("shard 2/2 has runs that did not finish (#1 running)"),
        "{stderr}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_without_a_share_skips_and_searches_are_refused() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = write_plan(
        dir.path(),
        &sim.base_url(),
        "{ concurrency = 1, requests = 3 }",
    );
    let out_dir = dir.path().join("out");
    let out = perfplan(&["run", s(&plan_path), "--out", s(&out_dir), "--shard", "2/2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("no share"), "{stderr}");
    assert!(!sim
        .received()
        .iter()
        .any(|r| r.path.ends_with("/completions")));
    // Shard 1/2 takes the whole run: its one slot and all three requests.
    let first = dir.path().join("first");
    let out = perfplan(&["run", s(&plan_path), "--out", s(&first), "--shard", "1/2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chat = |sim: &SimServer| {
        sim.received()
            .iter()
            .filter(|r| r.path.ends_with("/completions"))
            .count()
    };
    assert_eq!(chat(&sim), 3);
    let merged = dir.path().join("merged");
    let out = perfplan(&["merge", s(&merged), s(&out_dir), s(&first)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&merged).unwrap();
    assert_eq!(store.runs().unwrap()[0].metrics["requests_ok"], Some(3.0));

    let search = r#"{ search = "concurrency", slo = { ttft_p90 = "<= 40ms" }, min = 1, max = 8 }"#;
    let plan_path = write_plan(dir.path(), &sim.base_url(), search);
    let out = perfplan(&[
        "run",
        s(&plan_path),
        "--out",
        s(&dir.path().join("x")),
        "--shard",
        "1/2",
    ]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("SLA search"));
    for bad in [["--shard", "3/2"], ["--start-at", "soon"]] {
        assert_eq!(code(&perfplan(&["run", s(&plan_path), bad[0], bad[1]])), 2);
    }
    assert_eq!(chat(&sim), 3, "nothing sent by the refused commands");
    sim.shutdown().await;
}

/// Runs `plan_path` as shards 1/2 and 2/2 at once, both starting in 6 s (returned, in
/// unix seconds): long enough for two debug binaries to load their plans, check their
/// files and endpoints on a busy 2-core machine (4 s was not, with parallel builds), so
/// neither shard arrives after the start (which would shift its arrivals on the merged
/// time base).
fn run_two_shards(plan_path: &Path, outs: &[PathBuf]) -> f64 {
    let start = SystemTime::now() + Duration::from_millis(6000);
    let start_s = start.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let children: Vec<_> = (1..=2)
        .map(|k| {
            Command::new(env!("CARGO_BIN_EXE_perfplan"))
                .args(["run", s(plan_path), "--out", s(&outs[k - 1])])
                .args(["--shard", &format!("{k}/2"), "--start-at"])
                .arg(format!("{start_s:.3}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    start_s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_shards_interleave_the_one_arrival_sequence() {
    let sim = SimServer::start(sim_config()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let load = r#"{ rate = 10, requests = 5, arrivals = "constant" }"#;
    let plan_path = write_plan(dir.path(), &sim.base_url(), load);
    let outs: Vec<PathBuf> = (1..=2).map(|k| dir.path().join(format!("s{k}"))).collect();
    run_two_shards(&plan_path, &outs);
    let merged = dir.path().join("merged.db");
    let out = perfplan(&["merge", s(&merged), s(&outs[0]), s(&outs[1])]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open(&merged).unwrap();
    let runs = store.runs().unwrap();
    let rows = store.request_rows(&runs[0].id).unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(runs[0].metrics["requests_ok"], Some(5.0));
    // Shard 1 sends arrivals 0, 2, 4 and shard 2 arrivals 1, 3 (100 ms apart): on the
    // merged time base they alternate, never two at once.
    let mut intended: Vec<u64> = rows.iter().map(|r| r.intended.as_micros() as u64).collect();
    intended.sort_unstable();
    let gaps: Vec<u64> = intended.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| *g > 50_000), "gaps {gaps:?} µs");
    sim.shutdown().await;
}
