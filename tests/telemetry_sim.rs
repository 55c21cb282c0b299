//! Server telemetry against the simulator, through the binary: the sampler's time series
//! stored beside the requests on the same clock, the server-side TTFT from the
//! simulator's vLLM histogram next to the client's, queue depth when the load exceeds the
//! batch, and a telemetry URL that never answers (a warning, not a failed run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

mod cli_support;

use cli_support::{perfplan, query, report_json};
use perfplan::store::{RunStatus, Store};

fn plan(dead_port: u16) -> String {
    format!(
        r#"
[plan]
name = "telemetry"
seed = 3

[endpoints.sim]
base_url = "sim://t"
telemetry = {{ interval = "200ms", urls = ["http://127.0.0.1:{dead_port}/metrics"] }}

[endpoints.sim.sim]
models = ["m"]
ttft_base = "50ms"
itl_base = "5ms"
max_num_seqs = 4
cache_blocks = 256
prefix_cache = true
tokenizer = "{tok}"

[models.m]
tokenizer = "{tok}"

[datasets.d]
kind = "random"
input_tokens = 64

[defaults]
output_tokens = 12
ignore_eos = true
stream = true

[matrix]
load = [
  {{ concurrency = 2, requests = 24, warmup = 2 }},
  {{ concurrency = 16, requests = 64, warmup = 16 }},
]
"#,
        tok = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/smollm2"),
    )
}

fn metric(run: &serde_json::Value, name: &str) -> Option<f64> {
    run["metrics"][name].as_f64()
}

/// A port nothing listens on: bound, then closed.
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn telemetry_of_a_simulator_run_is_stored_and_agrees_with_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.toml");
    std::fs::write(&plan_path, plan(dead_port())).unwrap();
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        plan_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let db = out.join("results.db");
    let store = Store::open(&db).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2);
    let json = report_json(&db);
    for (run, doc) in runs.iter().zip(&json) {
        assert_eq!(run.status, RunStatus::Done);
        // The exporter URL that never answers: one warning on the run, no failure.
        let dead: Vec<String> = run
            .warnings
            .iter()
            .map(ToString::to_string)
            .filter(|w| w.starts_with("telemetry: ") && w.contains("scrapes of http://127.0.0.1:"))
            .collect();
        assert_eq!(dead.len(), 1, "{:?}", run.warnings);
        check_series(&store, &db, &run.id);
        check_metrics(doc, run.axes["load"]["concurrency"].as_u64().unwrap());
    }
    check_page(&out.join("report.html"), runs.len());
}

/// The page draws each run's gauges on its time axis and gives the server's TTFT next to
/// the client's.
fn check_page(page: &Path, runs: usize) {
    let html = std::fs::read_to_string(page).unwrap();
    let gauges = html
        .matches(": server requests running and waiting</title>")
        .count();
    assert_eq!(gauges, runs, "a gauge chart per run");
    assert_eq!(html.matches(": server KV-cache use</title>").count(), runs);
    // `client p50 / p99 · server p50 / p99`, the server's figures known.
    let cells: Vec<&str> = html
        .split("<td class=\"n\">")
        .skip(1)
        .map(|c| c.split("</td>").next().unwrap_or_default())
        .filter(|c| c.contains(" · "))
        .collect();
    assert_eq!(cells.len(), runs, "{cells:?}");
    for cell in cells {
        let (_, server) = cell.split_once(" · ").unwrap();
        assert!(!server.contains('—'), "server TTFT unknown: {cell}");
    }
}

/// Time series on the requests' clock: a scrape before the first request and one after
/// the last; gauges within their ranges.
fn check_series(store: &Store, db: &Path, run_id: &str) {
    let series = store.telemetry_series(run_id).unwrap();
    let of = |name: &str| {
        series
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| panic!("no series {name}: {series:?}"))
    };
    let waiting = of("waiting");
    let kv = of("kv_cache_usage");
    assert!(waiting.len() >= 3, "{waiting:?}");
    assert!(kv.iter().all(|(_, v)| (0.0..=1.0).contains(v)), "{kv:?}");
    // Blocks held by running sequences: some while the load runs, none once it ended.
    assert!(kv.iter().any(|(_, v)| *v > 0.0), "{kv:?}");
    assert_eq!(kv.last().unwrap().1, 0.0, "{kv:?}");
    let first_sent: Vec<Vec<Option<i64>>> = query(
        db,
        &format!("SELECT MIN(sent_us), MAX(end_us) FROM requests WHERE run_id = '{run_id}'"),
    );
    let (first_sent, last_end) = (first_sent[0][0].unwrap(), first_sent[0][1].unwrap());
    let (t0, t1) = (waiting[0].0, waiting.last().unwrap().0);
    // Scrape times are whole milliseconds (two roundings: up to 2 ms off).
    assert!(
        t0 * 1e6 <= first_sent as f64 + 2000.0,
        "{t0} s vs {first_sent} us"
    );
    assert!(
        t1 * 1e6 >= last_end as f64 - 2000.0,
        "{t1} s vs {last_end} us"
    );
    let buckets: Vec<Vec<Option<f64>>> = query(
        db,
        &format!(
            "SELECT COUNT(*) FROM telemetry WHERE run_id = '{run_id}' \
             AND name = 'server_ttft_seconds_bucket'"
        ),
    );
    assert!(buckets[0][0].unwrap() >= 23.0, "{buckets:?}");
}

fn check_metrics(doc: &serde_json::Value, concurrency: u64) {
    let (server, client) = (
        metric(doc, "server_ttft_p50").expect("server_ttft_p50"),
        metric(doc, "ttft_p50").unwrap(),
    );
    let running_max = metric(doc, "running_max").unwrap();
    assert!(running_max <= 4.0, "{running_max}");
    assert_eq!(metric(doc, "preemptions"), Some(0.0));
    assert!(metric(doc, "server_itl_p50").unwrap() <= 10.0, "{doc}");
    assert!(metric(doc, "server_latency_p50").is_some());
    assert_eq!(metric(doc, "gpu_power_w_mean"), None);
    let queue_max = metric(doc, "queue_depth_max").unwrap();
    if concurrency <= 4 {
        // 50 ms lies in vLLM's (40 ms, 60 ms] bucket: interpolated within it, the server's
        // median is within that bucket's width (20 ms) of the client's, plus 5 ms of loopback.
        assert!(
            (server - client).abs() <= 25.0,
            "server {server} vs client {client}"
        );
        assert_eq!(queue_max, 0.0);
    } else {
        // 16 in flight, 4 batch slots: up to 12 wait.
        assert!(queue_max > 0.0 && queue_max <= 12.0, "{queue_max}");
        assert!(metric(doc, "queue_depth_mean").unwrap() > 0.0);
    }
}

/// A launched server that reports its cache use only in its log, as llama-cpp-python's
/// does: the simulator (with no counters at the page perfplan reads) beside a loop that
/// logs one request's pair of lines every 50 ms, 30 of 40 prompt tokens hit.
#[test]
fn a_launched_servers_log_gives_the_server_cache_hit_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let lines = "Llama.generate: 30 prefix-match hit, remaining 10 prompt tokens to eval\\\\n\
                 llama_perf_context_print: prompt eval time = 1.00 ms /    10 tokens\\\\n";
    let launch = format!(
        "sh -c 'perfplan sim --port {{port}} --ttft-base 20ms --itl-base 5ms & \
         while sleep 0.05; do printf \\\"{lines}\\\"; done'"
    );
    let plan = format!(
        r#"[plan]
name = "log"
[endpoints.l]
base_url = "http://127.0.0.1:{{port}}"
launch = "{launch}"
metrics = {{ path = "/no-metrics-here", cache_hits = "h", cache_queries = "q" }}
[models.m]
[datasets.p]
kind = "prompt"
text = "hello there"
[defaults]
output_tokens = 8
ignore_eos = true
[matrix]
load = {{ concurrency = 1, requests = 10, warmup = 0 }}
"#
    );
    let path = dir.path().join("log.toml");
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = std::fs::read_to_string(out.join("servers/l.log")).unwrap();
    assert!(log.contains("prefix-match hit"), "{log}");
    let runs = Store::open(&out.join("results.db"))
        .unwrap()
        .runs()
        .unwrap();
    let ratio = runs[0].metrics["server_cache_hit_ratio"];
    assert_eq!(ratio, Some(0.75), "{:?}", runs[0]);
    // The default page did not answer: no warning about it.
    assert!(
        runs[0]
            .warnings
            .iter()
            .all(|w| w.code != perfplan::trust::Code::Telemetry),
        "{:?}",
        runs[0].warnings
    );
}

#[test]
fn telemetry_keys_are_checked_with_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "[plan]\nname = \"x\"\n[endpoints.e]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         telemetry = { interval = \"10ms\", urls = [\"ftp://h/m\", \"/m\", \"/m\"], enable = true }\n\
         [models.m]\n[datasets.d]\nkind = \"prompt\"\ntext = \"hi\"\n\
         [matrix]\nload = { concurrency = 1, requests = 1 }\n",
    )
    .unwrap();
    let o = perfplan(&["validate", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success());
    for want in [
        "`endpoints.e.telemetry.interval`: must be from 100ms to 1h",
        "did you mean `enabled`?",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("\"10ms\"", "\"1s\"")
            .replace(", enable = true", ""),
    )
    .unwrap();
    let o = perfplan(&["validate", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    for want in [
        "telemetry URL: `ftp://h/m` is neither a path nor an http:// or https:// URL",
        "bad.toml:5:",
        "telemetry URL: `/m` is listed twice",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
}

#[test]
fn check_reports_each_telemetry_url_and_its_known_families() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan(dead_port())).unwrap();
    let o = perfplan(&["check", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("telemetry")).collect();
    assert!(rows.iter().any(|l| l.contains("pass")), "{text}");
    assert!(rows.iter().any(|l| l.contains("warn")), "{text}");
    // The table's cells, its borders and wrapping left out.
    let flat: String = text
        .lines()
        .filter(|l| l.contains("telemetry") || l.starts_with("│          ┆"))
        .flat_map(|l| l.split('┆').nth(4))
        .flat_map(|cell| cell.chars().filter(|c| !c.is_whitespace() && *c != '│'))
        .collect();
    for family in [
        "answers(vllm):gaugesrunning,waiting,kv_cache_usage;",
        "histogramsserver_ttft,server_itl,server_latency,server_queue;",
    ] {
        assert!(flat.contains(family), "{family}: {text}");
    }
}
