//! Benchmark, not a timed test (`#[ignore]`): tokens per second the simulator streams with
//! zero delays when its server runs on one thread (one core). Run with a release build:
//!
//! ```text
//! cargo test --release --test sim_bench -- --ignored --nocapture
//! ```
//!
//! or `bash bench/sim_throughput.sh`. The client runs on other threads and counts bytes only;
//! tokens are the server's own `vllm:generation_tokens_total`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::json;

/// Streams the client keeps open, requests in all, output tokens per request.
struct Load {
    streams: usize,
    requests: usize,
    max_tokens: u32,
}

/// CPU time of the calling thread so far (Linux `/proc/thread-self/stat`, 100 ticks/s).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

/// What one benchmark measured.
struct Measured {
    tokens: u64,
    bytes: u64,
    elapsed: Duration,
    /// CPU time of the server's one thread during the load.
    server_cpu: Duration,
}

impl Measured {
    fn line(&self, what: &str) -> String {
        let per = |d: Duration| self.tokens as f64 / d.as_secs_f64().max(1e-3);
        format!(
            "{what}: {} tokens, {:.1} MB in {:.2?} = {:.0} tokens/s wall; server thread CPU {:.2?} = {:.0} tokens per CPU-second",
            self.tokens,
            self.bytes as f64 / 1e6,
            self.elapsed,
            per(self.elapsed),
            self.server_cpu,
            per(self.server_cpu)
        )
    }
}

/// Runs `cfg` on a current-thread runtime on its own OS thread (one core at most) and puts
/// `load` on it from a 2-thread client runtime.
fn run(cfg: SimConfig, load: Load) -> Measured {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (cpu_tx, cpu_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let sim = SimServer::start(cfg).await.unwrap();
            addr_tx.send(sim.base_url()).unwrap();
            let cpu = thread_cpu();
            let _ = stop_rx.await;
            cpu_tx.send(thread_cpu() - cpu).unwrap();
            sim.shutdown().await;
        });
    });
    let base = addr_rx.recv().unwrap();
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (tokens, bytes, elapsed) = client_rt.block_on(drive(&base, &load));
    let _ = stop_tx.send(());
    server.join().unwrap();
    Measured {
        tokens,
        bytes,
        elapsed,
        server_cpu: cpu_rx.recv().unwrap(),
    }
}

#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn zero_delay_tokens_per_second_on_one_core() {
    let cfg = SimConfig {
        ttft_base: HumanDuration(Duration::ZERO),
        itl_base: HumanDuration(Duration::ZERO),
        truth: false,
        max_num_seqs: 1024,
        ..SimConfig::default()
    };
    let load = Load {
        streams: 64,
        requests: 512,
        max_tokens: 2000,
    };
    let m = run(cfg, load);
    println!("{} (64 streams, zero delays)", m.line("sim throughput"));
}

/// 1,000 streams at 5 ms per token (200,000 tokens/s if every token is on time), each token
/// its own write: the achieved rate shows whether one server thread keeps the schedule.
#[test]
#[ignore = "benchmark: run with --release -- --ignored --nocapture"]
fn paced_streams_keep_schedule_on_one_core() {
    let cfg = SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(5)),
        itl_base: HumanDuration(Duration::from_millis(5)),
        truth: false,
        max_num_seqs: 2000,
        itl_knee: 2000,
        ..SimConfig::default()
    };
    let load = Load {
        streams: 1000,
        requests: 1000,
        max_tokens: 400,
    };
    let m = run(cfg, load);
    println!(
        "{} (1000 streams x 5 ms/token; on time = 2.0 s)",
        m.line("sim paced")
    );
}

async fn drive(base: &str, load: &Load) -> (u64, u64, Duration) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(load.streams)
        .build()
        .unwrap();
    let url = format!("{base}/v1/chat/completions");
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "go"}],
        "max_tokens": load.max_tokens, "ignore_eos": true, "stream": true})
    .to_string();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let requests = load.requests;
    let workers: Vec<_> = (0..load.streams)
        .map(|_| {
            let (client, url, body, next) =
                (client.clone(), url.clone(), body.clone(), next.clone());
            tokio::spawn(async move {
                let mut bytes = 0u64;
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < requests {
                    let mut r = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    while let Some(c) = r.chunk().await.unwrap() {
                        bytes += c.len() as u64;
                    }
                }
                bytes
            })
        })
        .collect();
    let mut bytes = 0;
    for w in workers {
        bytes += w.await.unwrap();
    }
    let elapsed = start.elapsed();
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let tokens = metrics
        .lines()
        .find(|l| l.starts_with("vllm:generation_tokens_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap() as u64;
    assert_eq!(tokens, load.requests as u64 * u64::from(load.max_tokens));
    (tokens, bytes, elapsed)
}
