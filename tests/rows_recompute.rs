//! Metrics recomputed from stored rows equal the live run's, through the binary, under
//! every `metric_definitions`: a one-shard suite merged (`merge` recomputes every metric
//! from the rows) and an SLA search (each step's metrics come from its probe's rows).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::collections::BTreeMap;
use std::path::Path;

use cli_support::perfplan;
use perfplan::metrics::names::all_names;
use perfplan::store::Store;

const DEFINITIONS: [&str; 3] = ["perfplan", "vllm", "evalscope"];

/// Streams with a role chunk first and a finish chunk after the last content, so the
/// three definitions time them differently; some HTTP 500s and cut streams; two tokens a
/// chunk counted from the per-chunk usage, every third token without text, reasoning
/// first (so per-token ITL, chunk gaps and the reasoning split come from rows too).
fn plan(definitions: &str, load: &str) -> String {
    format!(
        r#"
[plan]
name = "recompute"
seed = 11
metric_definitions = "{definitions}"

[endpoints.sim]
base_url = "sim://r"

[endpoints.sim.sim]
ttft_base = "3ms"
itl_base = "1ms"
tokens_per_chunk = 2
empty_chunks = 3
reasoning_tokens = 2
prefix_cache = true
fault_http_500 = 0.1
fault_drop = 0.1

[models.m]

[datasets.p]
kind = "prompt"
text = "the same prompt every time, so the prefix cache finds it"

[defaults]
output_tokens = 9
ignore_eos = true
continuous_usage = true

[slo]
ttft = "<= 50ms"

[matrix]
load = {load}
"#
    )
}

fn write(dir: &Path, text: &str) -> String {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success() || out.status.code() == Some(4),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every run's stored metrics by run id.
fn metrics(db: &Path) -> BTreeMap<String, BTreeMap<String, Option<f64>>> {
    let store = Store::open(db).unwrap();
    store
        .runs()
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.metrics))
        .collect()
}

fn assert_equal(
    live: &BTreeMap<String, Option<f64>>,
    back: &BTreeMap<String, Option<f64>>,
    skip: &[&str],
    what: &str,
) {
    for name in all_names().iter().filter(|n| !skip.contains(&n.as_str())) {
        let (a, b) = (live.get(name), back.get(name));
        assert!(a.is_some(), "{what}: `{name}` not stored");
        let bits = |v: Option<&Option<f64>>| v.map(|v| v.map(f64::to_bits));
        assert_eq!(
            bits(a),
            bits(b),
            "{what}: `{name}` live {a:?}, from rows {b:?}"
        );
    }
}

#[test]
fn a_merged_suite_recomputes_every_metric_as_the_live_run_under_every_definition() {
    for defs in DEFINITIONS {
        let dir = tempfile::tempdir().unwrap();
        let loads =
            r#"[{ concurrency = 3, requests = 40, warmup = 3 }, { rate = 200, requests = 30 }]"#;
        let plan = write(dir.path(), &plan(defs, loads));
        let shard = dir.path().join("shard");
        let merged = dir.path().join("merged");
        let s = |p: &Path| p.to_str().unwrap().to_string();
        ok(&perfplan(&[
            "run",
            &plan,
            "--shard",
            "1/1",
            "--out",
            &s(&shard),
        ]));
        ok(&perfplan(&["merge", &s(&merged), &s(&shard)]));
        // `--out DIR` of a shard: its suite is in DIR/shard-K-of-N.
        let (live, back) = (metrics(&shard.join("shard-1-of-1")), metrics(&merged));
        assert_eq!(live.len(), 2);
        for (id, m) in &live {
            assert!(m["requests_failed"].unwrap() > 0.0, "the plan has failures");
            assert_equal(m, &back[id], &[], &format!("{defs}, run {id}"));
        }
    }
}

#[test]
fn sla_search_steps_from_rows_equal_their_probes_live_metrics_under_every_definition() {
    // Pooled steps know nothing of the client's CPU or the server's counters.
    let not_from_rows: Vec<&str> = [
        "client_cpu_ratio",
        "client_wait_ratio",
        "server_cache_hit_ratio",
        "planned_prefix_share",
    ]
    .into_iter()
    .chain(perfplan::telemetry::scalars::SCALAR_NAMES)
    .collect();
    // The plan's faults fail some requests: the search's success floor is lowered so
    // that both probes pass and are pooled.
    for defs in DEFINITIONS {
        let dir = tempfile::tempdir().unwrap();
        let search = r#"{ search = "concurrency", slo = { ttft_p99 = "<= 10s", success_ratio = ">= 0" }, min = 1, max = 2, requests_per_step = 12, trials = 1 }"#;
        let plan = write(dir.path(), &plan(defs, search));
        let out = dir.path().join("out");
        ok(&perfplan(&["run", &plan, "--out", out.to_str().unwrap()]));
        let store = Store::open(&out).unwrap();
        let searches = store.searches().unwrap();
        let steps = store.search_steps(&searches[0].run_id).unwrap();
        let probes = store.probes(&searches[0].run_id).unwrap();
        assert_eq!((steps.len(), probes.len()), (2, 2), "{defs}");
        for (step, probe) in steps.iter().zip(&probes) {
            assert_eq!(step.step, probe.step);
            let live: BTreeMap<String, Option<f64>> = all_names()
                .into_iter()
                .map(|n| {
                    let v = store.run_metric(&probe.run_id, &n).unwrap();
                    (n, v)
                })
                .collect();
            let what = format!("{defs}, step {}", step.step);
            assert_equal(&live, &step.metrics, &not_from_rows, &what);
        }
    }
}

/// A server whose streams end as they can over a real network: a role chunk, three
/// content chunks 5 ms apart, the finish chunk, and only 40 ms later the usage chunk and
/// `[DONE]`. `vllm` ends latency at the finish chunk and `evalscope` at the stream's
/// end, so rows must keep the finish chunk's time for a merge to agree. Any GET is 404.
async fn late_usage_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            // As servers do: each event leaves when written (no Nagle delay).
            let _ = sock.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + length {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..head_end + length);
                    if head.starts_with("get") {
                        let no = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
                        if sock.write_all(no.as_bytes()).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    if stream_late_usage(&mut sock).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

async fn stream_late_usage(sock: &mut tokio::net::TcpStream) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let choice = |delta: &str, finish: &str| {
        format!(
            r#"{{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
        )
    };
    let usage = r#"{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#;
    let events = [
        (choice(r#"{"role":"assistant"}"#, "null"), 5),
        (choice(r#"{"content":"a"}"#, "null"), 5),
        (choice(r#"{"content":"b"}"#, "null"), 5),
        (choice(r#"{"content":"c"}"#, "null"), 5),
        (choice("{}", r#""length""#), 40),
        (usage.to_string(), 0),
        ("[DONE]".to_string(), 0),
    ];
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    sock.write_all(head.as_bytes()).await?;
    for (data, pause_ms) in events {
        let event = format!("data: {data}\n\n");
        sock.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())
            .await?;
        sock.flush().await?;
        tokio::time::sleep(std::time::Duration::from_millis(pause_ms)).await;
    }
    sock.write_all(b"0\r\n\r\n").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_keeps_the_finish_chunk_time_that_vllm_latency_ends_at() {
    let base_url = late_usage_server().await;
    for defs in DEFINITIONS {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            r#"
[plan]
name = "late-usage"
metric_definitions = "{defs}"

[endpoints.late]
base_url = "{base_url}"
connection_test = false

[models.m]

[datasets.p]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 3

[matrix]
load = {{ concurrency = 2, requests = 10, warmup = 2 }}
"#
        );
        let plan = write(dir.path(), &text);
        let shard = dir.path().join("shard");
        let merged = dir.path().join("merged");
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let o = perfplan(&["run", &plan, "--shard", "1/1", "--out", &s(&shard)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        ok(&perfplan(&["merge", &s(&merged), &s(&shard)]));
        // `--out DIR` of a shard: its suite is in DIR/shard-K-of-N.
        let (live, back) = (metrics(&shard.join("shard-1-of-1")), metrics(&merged));
        for (id, m) in &live {
            assert_eq!(m["requests_ok"], Some(10.0), "{defs}");
            assert_equal(m, &back[id], &[], &format!("{defs}, run {id}"));
        }
        // The rows hold the finish chunk, which the server sends 40 ms before the end
        // (a loaded client may stamp it late: half of that is the bound).
        let store = Store::open(&merged).unwrap();
        for run in store.runs().unwrap() {
            for r in store.request_records(&run.id).unwrap() {
                let before_end = r.end - r.last_chunk.unwrap();
                assert!(before_end >= ms(20), "{defs}: {before_end:?}");
            }
        }
    }
}

fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}
