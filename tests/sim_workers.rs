//! A simulator with `workers`: one URL in front of several simulated engines, each with
//! its own prefix cache, as a KV-aware router looks from the client. Over HTTP on an
//! ephemeral port: a prefix-groups plan that sends its session header gets each group
//! pinned to one worker and a markedly higher server hit ratio than the same plan without
//! it; `/metrics` has a series per worker that sum to the simulator's; `perfplan sim
//! --workers` serves them and refuses a route without workers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use perfplan::store::Store;
use perfplan::units::HumanDuration;

const BIN: &str = env!("CARGO_BIN_EXE_perfplan");

fn tokenizer() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

/// Four workers whose caches each hold about two of the plan's four group prefixes.
fn four_workers() -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(1)),
        itl_base: HumanDuration(Duration::from_millis(0)),
        workers: 4,
        block_size: 16,
        cache_blocks: 40,
        tokenizer: Some(tokenizer().display().to_string()),
        ..SimConfig::default()
    }
}

/// Seed 31: the four groups' session ids hash to four different workers (with seed 11,
/// three share worker 1, as hashing four ids over four workers does 91% of the time).
/// Two endpoints on one simulator URL, `routed` sending the session header and
/// `unrouted` not; 4 prefix groups of 256 tokens drawn with equal weights (a seeded draw,
/// not in turn, so a round robin does not pin them by accident).
fn plan(url: &str) -> String {
    plan_seeded(url, 31)
}

fn plan_seeded(url: &str, seed: u64) -> String {
    let endpoint = |name: &str, header: &str| {
        format!(
            "[endpoints.{name}]\nbase_url = \"{url}\"\nprefix_cache = \"on\"\n\
             reset_cache_before = \"each_run\"\n{header}\n"
        )
    };
    format!(
        r#"
[plan]
name = "workers"
seed = {seed}
{}{}
[models.m]
served_name = "sim-model"
tokenizer = "{}"
[datasets.d]
kind = "random"
input_tokens = 320
prefix_tokens = 256
prefix_groups = 4
prefix_weights = [1, 1, 1, 1]
[defaults]
output_tokens = 2
ignore_eos = true
[matrix]
endpoint = ["routed", "unrouted"]
load = {{ concurrency = 4, requests = 80, warmup = 0 }}
"#,
        endpoint("routed", "session_header = \"x-session-id\""),
        endpoint("unrouted", ""),
        tokenizer().display()
    )
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn the_session_header_pins_groups_to_workers_and_raises_the_hit_ratio() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt.block_on(SimServer::start(four_workers())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan(&sim.base_url())).unwrap();
    let out = dir.path().join("out");
    cli_support::run(&path, &out);
    let runs = Store::open(&out).unwrap().runs().unwrap();
    let metric = |endpoint: &str, name: &str| {
        let run = runs
            .iter()
            .find(|r| r.axes["endpoint"] == endpoint)
            .unwrap();
        run.metrics[name].unwrap_or_else(|| panic!("{name}: {:?}", run.metrics))
    };
    let (pinned, spread) = (
        metric("routed", "server_cache_hit_ratio"),
        metric("unrouted", "server_cache_hit_ratio"),
    );
    let (pinned_usage, spread_usage) = (
        metric("routed", "cache_hit_ratio"),
        metric("unrouted", "cache_hit_ratio"),
    );
    eprintln!(
        "server_cache_hit_ratio: with the header {pinned:.3}, without {spread:.3}; \
         cache_hit_ratio (usage): {pinned_usage:.3} vs {spread_usage:.3}"
    );
    // Every request of one session id was served by one worker; without it, round robin.
    let worker_of: BTreeMap<String, u32> = sim
        .truth()
        .iter()
        .filter_map(|t| Some((t.client_request_id.clone()?, t.worker?)))
        .collect();
    let mut by_session: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    let mut plain = Vec::new();
    let received = sim.received();
    for r in received.iter().filter(|r| r.method == "POST") {
        let worker = worker_of[header(&r.headers, "x-request-id").unwrap()];
        match header(&r.headers, "x-session-id") {
            Some(s) => by_session.entry(s).or_default().insert(worker),
            None => {
                plain.push(worker);
                true
            }
        };
    }
    assert_eq!(by_session.len(), 4, "{by_session:?}");
    assert!(by_session.values().all(|w| w.len() == 1), "{by_session:?}");
    let mut shares = [0; 4];
    plain.iter().for_each(|w| shares[*w as usize] += 1);
    assert!(shares
        .iter()
        .all(|n| (*n as i64 - shares[0] as i64).abs() <= 1));
    assert!(plain.len() >= 80, "{}", plain.len());
    metrics_sum_over_workers(&rt, &sim);
    assert!(pinned > spread + 0.2, "{pinned} vs {spread}");
    assert!(pinned_usage > spread_usage + 0.2);
}

/// `/metrics`: each family once, a series per worker (`engine`), summing to the requests.
fn metrics_sum_over_workers(rt: &tokio::runtime::Runtime, sim: &SimServer) {
    let url = format!("{}/metrics", sim.base_url());
    let text = rt.block_on(async { reqwest::get(url).await.unwrap().text().await.unwrap() });
    let family = "vllm:request_success_total";
    assert_eq!(text.matches(&format!("# TYPE {family} ")).count(), 1);
    let series: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{family}{{engine=")))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(series.len(), 4, "{text}");
    let finished = sim.truth().iter().filter(|t| t.status == 200).count();
    assert_eq!(series.iter().sum::<f64>() as usize, finished);
    assert!(text.contains("vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",engine=\"3\""));
}

fn sim_text(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(BIN).arg("sim").args(args).output().unwrap();
    let text = String::from_utf8_lossy(&o.stderr).into_owned();
    (o.status.code(), text)
}

#[test]
fn perfplan_sim_serves_workers_and_refuses_a_route_without_them() {
    let sim = cli_support::SimProcess::start(&["--workers", "3", "--threads", "1"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = rt.block_on(async {
        let m = reqwest::get(format!("{}/metrics", sim.url)).await.unwrap();
        m.text().await.unwrap()
    });
    drop(sim);
    assert!(
        text.contains("vllm:prompt_tokens_total{engine=\"2\""),
        "{text}"
    );
    let (code, err) = sim_text(&["--port", "0", "--route", "random"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`route`") && err.contains("workers"), "{err}");
    let (code, err) = sim_text(&["--port", "0", "--workers", "65"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`workers`"), "{err}");
}

/// `route = "sticky"` spreads new sessions over the workers holding the fewest: with
/// seed 11, where hashing puts three of the four groups on one worker, each group gets a
/// worker of its own and the hit ratio is the pinned one.
#[test]
fn a_sticky_route_gives_each_session_its_own_worker() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ratio = |route| {
        let cfg = SimConfig {
            route: Some(route),
            ..four_workers()
        };
        let sim = rt.block_on(SimServer::start(cfg)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.toml");
        let text = plan_seeded(&sim.base_url(), 11).replace(
            "endpoint = [\"routed\", \"unrouted\"]",
            "endpoint = \"routed\"",
        );
        std::fs::write(&path, text).unwrap();
        let out = dir.path().join("out");
        cli_support::run(&path, &out);
        let runs = Store::open(&out).unwrap().runs().unwrap();
        let workers: BTreeSet<u32> = sim.truth().iter().filter_map(|t| t.worker).collect();
        (
            runs[0].metrics["server_cache_hit_ratio"].unwrap(),
            workers.len(),
        )
    };
    let (sticky, used) = ratio(perfplan::plan::sim_settings::RouteRule::Sticky);
    let (hashed, _) = ratio(perfplan::plan::sim_settings::RouteRule::Session);
    eprintln!("seed 11: sticky {sticky:.3} over {used} workers, hashed {hashed:.3}");
    assert_eq!(used, 4, "every worker holds a session");
    assert!(sticky > hashed + 0.1, "sticky {sticky} vs hashed {hashed}");
}
