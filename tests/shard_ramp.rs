//! A concurrency ramp split over shards (`run --shard K/N`): each shard holds its part of
//! every level (the level split as a closed loop's concurrency is, so the parts sum to it;
//! a shard may hold no slot at a low level and starts sending when its part rises), and
//! the shards' databases merge into the ramp's one run. Before, the first shard ran all of
//! the ramp and the others skipped it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;

/// Levels 1 then 5, 700 ms each, of requests of about 40 ms.
fn plan(base_url: &str) -> String {
    format!(
        r#"
[plan]
name = "shard-ramp"
seed = 9

[endpoints.sim]
base_url = "{base_url}"

[models.m]

[datasets.p]
kind = "prompt"
text = "hi"

[defaults]
output_tokens = 8
ignore_eos = true

[matrix]
load = {{ concurrency_ramp = {{ concurrencies = [1, 5], step = "700ms" }} }}
"#
    )
}

/// (sent, end) of a run's measured requests, µs from its start.
fn times(db: &Path) -> Vec<(i64, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT sent_us, end_us FROM requests WHERE phase = 'measured'")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The most requests in flight at once among those sent in [from, to) µs.
fn most_in_flight(reqs: &[(i64, i64)], from: i64, to: i64) -> usize {
    let inside: Vec<_> = reqs.iter().filter(|(s, _)| *s >= from && *s < to).collect();
    inside
        .iter()
        .map(|(s, _)| inside.iter().filter(|(a, b)| a <= s && b > s).count())
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_shard_holds_its_part_of_every_level_and_the_parts_merge() {
    let sim = SimServer::start(SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(10)),
        itl_base: HumanDuration(Duration::from_millis(4)),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.toml");
    std::fs::write(&plan_path, plan(&sim.base_url())).unwrap();
    let mut dbs = Vec::new();
    // Levels 1 and 5 over 3 shards: parts [1, 2], [0, 2], [0, 1].
    for (k, want) in [(1, [1, 2]), (2, [0, 2]), (3, [0, 1])] {
        let out = dir.path().join(format!("s{k}"));
        let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
            .args(["run", plan_path.to_str().unwrap(), "--out"])
            .arg(&out)
            .args(["--shard", &format!("{k}/3")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "shard {k}: {stderr}");
        assert!(!stderr.contains("no share"), "shard {k}: {stderr}");
        let db = out.join(format!("shard-{k}-of-3")).join("results.db");
        let reqs = times(&db);
        let level = |from, to| most_in_flight(&reqs, from, to);
        // Inside each level, away from its edges (a request sent before a fall ends after it).
        assert_eq!(
            [level(0, 650_000), level(750_000, 1_400_000)],
            want,
            "shard {k}"
        );
        dbs.push(db);
    }
    let merged = dir.path().join("merged");
    let mut merge = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    merge.arg("merge").arg(&merged).args(&dbs);
    let o = merge.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all: usize = dbs.iter().map(|d| times(d).len()).sum();
    assert_eq!(times(&merged.join("results.db")).len(), all);
}
