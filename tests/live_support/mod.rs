//! The live tier's link to a real vLLM server (`tools/vllm/`): where it is
//! (`PERFPLAN_VLLM_URL`, a loopback URL), its served model and the model's tokenizer
//! folder, one server for the tests one at a time, plain HTTP/1.1 on `std::net` for its
//! `/metrics` and for a second client's requests, and the histogram bucket a quantile
//! falls in.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

/// The tests share one server: they run one at a time (whatever `--test-threads`).
static SERVER: Mutex<()> = Mutex::new(());

/// A live vLLM server.
pub struct Live {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    host_port: String,
    /// The model it serves (the first of `/v1/models`).
    pub model: String,
    /// The model's folder (tokenizer.json, tokenizer_config.json).
    pub tokenizer: PathBuf,
    _one_at_a_time: MutexGuard<'static, ()>,
}

/// The server of `PERFPLAN_VLLM_URL`, or `None` (the test says it did not run) when it is
/// not set. Only a loopback server is accepted: the tier loads it.
pub fn live() -> Option<Live> {
    let Ok(url) = std::env::var("PERFPLAN_VLLM_URL") else {
        eprintln!("PERFPLAN_VLLM_URL is not set: this live test did not run");
        return None;
    };
    let url = url
        .trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_string();
    let host_port = url
        .strip_prefix("http://")
        .expect("PERFPLAN_VLLM_URL must be http://127.0.0.1:PORT")
        .to_string();
    assert!(
        host_port.starts_with("127.0.0.1:") || host_port.starts_with("localhost:"),
        "the live tier loads only a server on this machine: {url}"
    );
    let guard = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let models: Value = serde_json::from_str(&get(&host_port, "/v1/models")).unwrap();
    let model = models["data"][0]["id"].as_str().unwrap().to_string();
    let tokenizer = match std::env::var("PERFPLAN_VLLM_TOKENIZER") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => state_dir().join("model").join(&model),
    };
    assert!(
        tokenizer.join("tokenizer.json").is_file(),
        "no tokenizer.json in {} (set PERFPLAN_VLLM_TOKENIZER)",
        tokenizer.display()
    );
    Some(Live {
        url,
        host_port,
        model,
        tokenizer,
        _one_at_a_time: guard,
    })
}

/// `tools/vllm`'s state folder: `PERFPLAN_VLLM_HOME`, else `~/.cache/perfplan-vllm`.
fn state_dir() -> PathBuf {
    if let Ok(home) = std::env::var("PERFPLAN_VLLM_HOME") {
        return PathBuf::from(home);
    }
    let cache = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
    cache.join("perfplan-vllm")
}

impl Live {
    /// The server's `/metrics` page.
    pub fn metrics(&self) -> String {
        get(&self.host_port, "/metrics")
    }

    /// One non-streamed chat request of `max_tokens` (a second client's); its status.
    pub fn chat(&self, text: &str, max_tokens: u32) -> u16 {
        let body = serde_json::json!({
            "model": self.model, "max_tokens": max_tokens, "ignore_eos": true,
            "messages": [{"role": "user", "content": text}],
        });
        request(
            &self.host_port,
            "POST",
            "/v1/chat/completions",
            &body.to_string(),
        )
        .0
    }
}

fn get(host_port: &str, path: &str) -> String {
    let (status, body) = request(host_port, "GET", path, "");
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// One HTTP/1.1 request (`Connection: close`), within 120 s; the status and the body.
fn request(host_port: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(host_port).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host_port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let chunked = head.to_lowercase().contains("transfer-encoding: chunked");
    (
        status,
        if chunked {
            dechunk(rest)
        } else {
            rest.to_string()
        },
    )
}

/// A chunked body's data.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    out
}

/// The cumulative buckets `(le, count)` of histogram `name` on a page, summed over series.
pub fn buckets(page: &str, name: &str) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{");
    let mut out: Vec<(f64, f64)> = Vec::new();
    for line in page.lines().filter(|l| l.starts_with(&prefix)) {
        let le = line
            .split("le=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap();
        let le: f64 = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap()
        };
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        match out.iter_mut().find(|(l, _)| *l == le) {
            Some(b) => b.1 += value,
            None => out.push((le, value)),
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The bucket `(lower, upper]` (seconds) holding the median of the observations made
/// between two pages' histograms.
pub fn median_bucket(before: &[(f64, f64)], after: &[(f64, f64)]) -> (f64, f64) {
    let count =
        |b: &[(f64, f64)], le: f64| b.iter().find(|(l, _)| *l == le).map_or(0.0, |(_, c)| *c);
    let delta: Vec<(f64, f64)> = after
        .iter()
        .map(|(le, c)| (*le, c - count(before, *le)))
        .collect();
    let total = delta.last().unwrap().1;
    assert!(total > 0.0, "no observation between the two pages");
    let mut lower = 0.0;
    for (le, c) in &delta {
        if *c >= total / 2.0 {
            return (lower, *le);
        }
        lower = *le;
    }
    unreachable!("the +Inf bucket holds every observation")
}

/// Whether this kernel stamps received data (`SO_TIMESTAMPNS` accepted on a loopback
/// socket): where it refuses, answers are timed by the client's reads.
pub fn kernel_stamps() -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        perfplan::rx_stamp::StampedTcp::new(tcp, true).kernel()
    })
}
