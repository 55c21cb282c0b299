//! Replicas and sessions over HTTP against simulators on ephemeral ports: `urls` spread
//! requests by `balance` (round robin exactly, random within a stated margin, session
//! sticky), every row keeps its replica, `report --by-replica` breaks the metrics down,
//! `session_header` carries a stable id per conversation, and session affinity raises
//! the prefix-cache hit ratio across replicas over round robin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use perfplan::sim::{ReceivedRequest, SimConfig, SimServer};
use perfplan::store::Store;
use perfplan::units::HumanDuration;

fn quick() -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(1)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn sims(rt: &tokio::runtime::Runtime, n: usize, cfg: &SimConfig) -> Vec<SimServer> {
    (0..n)
        .map(|_| rt.block_on(SimServer::start(cfg.clone())).unwrap())
        .collect()
}

fn urls(sims: &[SimServer]) -> String {
    let list: Vec<String> = sims
        .iter()
        .map(|s| format!("\"{}\"", s.base_url()))
        .collect();
    format!("[{}]", list.join(", "))
}

/// Runs `plan` (written to `dir/plan.toml`) into `dir/out`; returns the stdout.
fn run(dir: &Path, plan: &str, extra: &[&str]) -> String {
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["run", dir.join("plan.toml").to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    text
}

fn by_replica(out: &Path, metrics: &str) -> Vec<BTreeMap<String, String>> {
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["report", out.to_str().unwrap(), "--by-replica"])
        .args(["--metrics", metrics])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn posts(sim: &SimServer) -> Vec<ReceivedRequest> {
    sim.received()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect()
}

fn header<'a>(r: &'a ReceivedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn plan(endpoint: &str, dataset: &str, load: &str) -> String {
    format!(
        r#"
[plan]
name = "replicas"
seed = 9
[endpoints.e]
{endpoint}
[models.m]
served_name = "sim-model"
[datasets.d]
{dataset}
[defaults]
output_tokens = 2
ignore_eos = true
[matrix]
load = {load}
"#
    )
}

const PROMPT: &str = "kind = \"prompt\"\ntext = \"hello replicas\"";

#[test]
fn round_robin_gives_each_replica_its_exact_share_and_rows_keep_it() {
    let rt = runtime();
    let sims = sims(&rt, 3, &quick());
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!(
        "urls = {}\nbalance = \"round_robin\"\nsession_header = \"x-session-id\"\n\
         reset_cache_before = \"each_run\"",
        urls(&sims)
    );
    let load = "{ concurrency = 3, requests = 30, warmup = 3 }";
    run(dir.path(), &plan(&endpoint, PROMPT, load), &[]);
    // Every replica got its third of the 33 requests (warmup included), was probed by the
    // connection test, had its cache reset and was scraped.
    for s in &sims {
        assert_eq!(posts(s).len(), 11);
        assert_eq!(s.cache_resets(), 1);
        assert!(s.received().iter().any(|r| r.path.ends_with("/v1/models")));
        assert!(s.scrapes() > 0, "each replica's /metrics is scraped");
    }
    let out = dir.path().join("out");
    let store = Store::open(&out).unwrap();
    let run_id = store.runs().unwrap()[0].id.clone();
    let rows = store.request_rows(&run_id).unwrap();
    assert_eq!(rows.len(), 33);
    for r in &rows {
        assert_eq!(r.replica, Some((r.index % 3) as u32), "{:?}", r.index);
    }
    let table = by_replica(&out, "requests_ok,requests_failed,ttft_p50,rps");
    assert_eq!(table.len(), 3, "{table:?}");
    for (i, row) in table.iter().enumerate() {
        assert_eq!(row["replica"], i.to_string());
        assert_eq!(row["url"], sims[i].base_url());
        assert_eq!(
            (row["requests"].as_str(), row["requests_ok"].as_str()),
            ("10", "10")
        );
        assert_eq!(row["requests_failed"], "0");
        assert!(row["ttft_p50"].parse::<f64>().unwrap() > 0.0, "{row:?}");
        assert!(row["rps"].parse::<f64>().unwrap() > 0.0, "{row:?}");
    }
    // Single-turn: each item (3 warmup, 30 measured) its own session: 33 distinct ids.
    let ids: BTreeSet<String> = sims
        .iter()
        .flat_map(posts)
        .map(|r| header(&r, "x-session-id").unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 33, "{ids:?}");
    assert!(ids.iter().all(|i| i.len() == 16));
}

#[test]
fn random_balance_spreads_within_a_margin_and_repeats_from_the_seed() {
    let rt = runtime();
    let sims = sims(&rt, 4, &quick());
    let counts = |dir: &Path| {
        let store = Store::open(&dir.join("out")).unwrap();
        let run_id = store.runs().unwrap()[0].id.clone();
        let rows = store.request_rows(&run_id).unwrap();
        let order: Vec<u32> = rows.iter().map(|r| r.replica.unwrap()).collect();
        order
    };
    let endpoint = format!("urls = {}\nbalance = \"random\"", urls(&sims));
    let load = "{ concurrency = 8, requests = 200, warmup = 0 }";
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    run(a.path(), &plan(&endpoint, PROMPT, load), &[]);
    run(b.path(), &plan(&endpoint, PROMPT, load), &[]);
    let (first, again) = (counts(a.path()), counts(b.path()));
    assert_eq!(first, again, "the same seed draws the same replicas");
    // 200 draws over 4 replicas: 50 each, standard deviation 6.1; the margin is 4 of them.
    for replica in 0..4 {
        let n = first.iter().filter(|&&r| r == replica).count();
        assert!((26..=74).contains(&n), "replica {replica}: {n} of 200");
        assert_eq!(posts(&sims[replica as usize]).len(), 2 * n);
    }
    let round_robin = first.iter().enumerate().all(|(i, &r)| r as usize == i % 4);
    assert!(!round_robin, "random is not round robin");
}

#[test]
fn random_balance_draws_its_own_sequence_in_each_run_of_a_suite() {
    let rt = runtime();
    let sims = sims(&rt, 4, &quick());
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("urls = {}\nbalance = \"random\"", urls(&sims));
    // Two runs (two loads) of the same 40 requests: each run draws its own replicas.
    let load = "[{ concurrency = 4, requests = 40, warmup = 0 }, { concurrency = 2, requests = 40, warmup = 0 }]";
    run(dir.path(), &plan(&endpoint, PROMPT, load), &[]);
    let store = Store::open(&dir.path().join("out")).unwrap();
    let orders: Vec<Vec<u32>> = store
        .runs()
        .unwrap()
        .iter()
        .map(|r| {
            let mut rows = store.request_rows(&r.id).unwrap();
            rows.sort_by_key(|row| row.index);
            rows.iter().map(|row| row.replica.unwrap()).collect()
        })
        .collect();
    assert_eq!(orders.len(), 2);
    assert_ne!(orders[0], orders[1], "each run its own draws");
}

fn multi_turn(turns: u32) -> String {
    format!(
        "kind = \"random_multi_turn\"\nturns = {turns}\nuser_tokens = 120\nassistant_tokens = 8"
    )
}

/// Groups every received chat request by its conversation (its first user message).
fn by_conversation(sims: &[SimServer]) -> BTreeMap<String, Vec<(usize, String)>> {
    let mut out: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for (i, s) in sims.iter().enumerate() {
        for r in posts(s) {
            let first = r.body["messages"][0]["content"].to_string();
            let id = header(&r, "x-session-id").unwrap_or_default().to_string();
            out.entry(first).or_default().push((i, id));
        }
    }
    out
}

#[test]
fn sessions_are_stable_per_conversation_and_session_balance_sticks() {
    let rt = runtime();
    let sims = sims(&rt, 4, &quick());
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!(
        "urls = {}\nbalance = \"session\"\nsession_header = \"x-session-id\"",
        urls(&sims)
    );
    // Two runs (two loads): different prompts, the same 8 conversations' session ids.
    let load = "[{ concurrency = 8, requests = 32, warmup = 0 }, { concurrency = 4, requests = 32, warmup = 0 }]";
    run(dir.path(), &plan(&endpoint, &multi_turn(4), load), &[]);
    let groups = by_conversation(&sims);
    assert_eq!(groups.len(), 16, "8 conversations in each of 2 runs");
    let mut ids = BTreeMap::<String, usize>::new();
    for (first, turns) in &groups {
        assert_eq!(turns.len(), 4, "{first}");
        let replicas: BTreeSet<usize> = turns.iter().map(|t| t.0).collect();
        let sessions: BTreeSet<&str> = turns.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(replicas.len(), 1, "a conversation sticks to one replica");
        assert_eq!(sessions.len(), 1, "one session id per conversation");
        *ids.entry(turns[0].1.clone()).or_default() += 1;
    }
    assert_eq!(ids.len(), 8, "{ids:?}");
    assert!(
        ids.values().all(|&n| n == 2),
        "each id in both runs: {ids:?}"
    );
    let used: BTreeSet<usize> = groups.values().map(|t| t[0].0).collect();
    assert!(
        used.len() >= 3,
        "conversations spread over replicas: {used:?}"
    );
}

#[test]
fn session_affinity_raises_the_hit_ratio_across_replicas() {
    // The scenario: 5 simulated replicas (each its own prefix cache), 8 conversations of
    // 4 turns, balance by session vs round robin. Pinned, turns 2-4 find their history
    // cached (about 0.65 of their prompts); spread, a turn meets its history only where
    // timing sends it back to the same replica (lockstep round robin never does: 8 mod 5).
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/replicas-sessions.toml");
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let runs = Store::open(&out).unwrap().runs().unwrap();
    let hit = |endpoint: &str| {
        let r = runs
            .iter()
            .find(|r| r.axes["endpoint"] == endpoint)
            .unwrap();
        r.metrics["cache_hit_ratio_later_turns"].unwrap()
    };
    let (sticky, spread) = (hit("affinity"), hit("round-robin"));
    assert!(sticky > 0.6, "affinity: {sticky}");
    assert!(
        sticky > spread + 0.2,
        "affinity {sticky} vs round robin {spread}"
    );
    eprintln!("cache_hit_ratio_later_turns: affinity {sticky:.3}, round robin {spread:.3}");
    let table = by_replica(&out, "requests_ok,cache_hit_ratio");
    // Round robin uses all 5 replicas; 8 session ids may hash onto fewer (a replica
    // without a request has no row).
    let rows_of = |endpoint: &str| {
        let id = &runs
            .iter()
            .find(|r| r.axes["endpoint"] == endpoint)
            .unwrap()
            .id;
        table.iter().filter(|r| &r["run"] == id).count()
    };
    assert_eq!(rows_of("round-robin"), 5, "{table:?}");
    assert!((3..=5).contains(&rows_of("affinity")), "{table:?}");
}

#[test]
fn prefix_groups_are_the_sessions_of_single_turn_requests() {
    let rt = runtime();
    let sims = sims(&rt, 3, &quick());
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
    let text = format!(
        r#"
[plan]
name = "groups"
seed = 9
[endpoints.e]
urls = {}
balance = "session"
session_header = "x-session-id"
[models.m]
served_name = "sim-model"
tokenizer = "{}"
[datasets.d]
kind = "random"
input_tokens = 64
prefix_tokens = 40
prefix_groups = 4
[defaults]
output_tokens = 2
ignore_eos = true
[matrix]
load = {{ concurrency = 2, requests = 24, warmup = 2 }}
"#,
        urls(&sims),
        fixture.display()
    );
    run(dir.path(), &text, &[]);
    // 26 requests (warmup included), round robin over 4 groups: 4 session ids, each on
    // one replica only.
    let mut where_: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for (i, s) in sims.iter().enumerate() {
        for r in posts(s) {
            let id = header(&r, "x-session-id").unwrap().to_string();
            where_.entry(id).or_default().insert(i);
        }
    }
    assert_eq!(where_.len(), 4, "{where_:?}");
    assert!(where_.values().all(|at| at.len() == 1), "{where_:?}");
}

#[test]
fn check_asks_every_replica_for_the_model() {
    let rt = runtime();
    let sims = sims(&rt, 2, &quick());
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let dir = tempfile::tempdir().unwrap();
    let list = format!(
        "urls = [\"{}\", \"{}\", \"{dead}\"]",
        sims[0].base_url(),
        sims[1].base_url()
    );
    let path = dir.path().join("plan.toml");
    let load = "{ concurrency = 1, requests = 2 }";
    std::fs::write(&path, plan(&list, PROMPT, load)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["check", path.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    // Replicas 1 and 2 (0 is the endpoint's own rows): the live one passes, the dead fails.
    let verdict = |k: usize| {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("replica {k} model listed")))
            .unwrap_or_else(|| panic!("no row for replica {k}: {text}"));
        if line.contains(" pass ") {
            "pass"
        } else if line.contains(" FAIL ") || line.contains(" fail ") {
            "fail"
        } else {
            "?"
        }
    };
    assert_eq!(verdict(1), "pass", "{text}");
    assert_eq!(verdict(2), "fail", "{text}");
    assert!(
        !o.status.success(),
        "a replica that does not answer fails the check"
    );
}
