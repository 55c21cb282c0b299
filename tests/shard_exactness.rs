//! Exactness of a sharded suite, CI-sized (the tight comparison is
//! bench/shards.sh, figures in bench/RESULTS.md): 4 shards of 8 streams each, started
//! together by the barrier and merged, against one process at 32 streams, both against
//! one paced simulator (50 ms TTFT, 10 ms ITL: the machine is not the limit even on 2
//! shared cores with debug binaries). Request counts must be exact; TTFT p50/p90 and TPOT
//! mean must agree within 20% (stated loose: five debug processes share 2 cores here;
//! on an idle machine the bench's differences are far smaller).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use perfplan::store::Store;
use perfplan::units::HumanDuration;

const TOLERANCE: f64 = 0.20;

fn plan(dir: &Path, base_url: &str) -> std::path::PathBuf {
    let text = format!(
        "[plan]\nname = \"exactness\"\nseed = 3\n[endpoints.sim]\nbase_url = \"{base_url}\"\n\
         [models.m]\nserved_name = \"m\"\n[datasets.hello]\nkind = \"prompt\"\ntext = \"hello\"\n\
         [defaults]\noutput_tokens = 8\nignore_eos = true\n[matrix]\n\
         load = {{ concurrency = 32, requests = 128, warmup = 32 }}\n"
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn metrics(db: &Path) -> std::collections::BTreeMap<String, Option<f64>> {
    Store::open(db).unwrap().runs().unwrap()[0].metrics.clone()
}

fn ok(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{said}");
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_shards_of_8_streams_measure_what_one_process_of_32_does() {
    let sim = SimServer::start(SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(50)),
        itl_base: HumanDuration(Duration::from_millis(10)),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(dir.path(), &sim.base_url());
    let bin = env!("CARGO_BIN_EXE_perfplan");
    let one = dir.path().join("one");
    let p = plan.to_str().unwrap();
    ok(Command::new(bin).args(["run", p, "--out", one.to_str().unwrap()]));
    let shards = dir.path().join("shards");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let children: Vec<_> = (1..=4)
        .map(|k| {
            Command::new(bin)
                .args(["run", p, "--out", shards.to_str().unwrap(), "--merge"])
                .args([
                    "--shard",
                    &format!("{k}/4"),
                    "--barrier",
                    &format!("127.0.0.1:{port}"),
                ])
                .args(["--barrier-timeout", "60s"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (a, b) = (metrics(&one), metrics(&shards.join("merged")));
    assert_eq!(a["requests_ok"], Some(128.0));
    assert_eq!(
        b["requests_ok"],
        Some(128.0),
        "the shards' requests together, exactly"
    );
    for name in ["ttft_p50", "ttft_p90", "tpot_mean"] {
        let (x, y) = (a[name].unwrap(), b[name].unwrap());
        assert!(
            (y - x).abs() <= TOLERANCE * x,
            "{name}: one process {x:.2} ms, 4 shards {y:.2} ms"
        );
    }
    let seen = sim
        .received()
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .count();
    assert_eq!(
        seen,
        2 * (128 + 32),
        "each suite's warmup and measured requests, once"
    );
    sim.shutdown().await;
}
