//! Helpers shared by the simulator's integration tests: requests over real HTTP and an SSE
//! reader that timestamps every event as it arrives.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::Value;

/// One SSE event: arrival time and its `data:` payload (`event:` lines dropped).
#[derive(Debug, Clone)]
pub struct Event {
    pub at: Instant,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

/// How a streamed response ended.
#[derive(Debug)]
pub struct Streamed {
    pub status: u16,
    pub sent: Instant,
    pub headers_at: Instant,
    pub events: Vec<Event>,
    /// The body ended with an error (connection cut or timeout).
    pub error: Option<reqwest::Error>,
}

impl Streamed {
    /// Events with non-empty text content (chat `delta.content`, completions `text`,
    /// responses `delta`).
    pub fn content_events(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| e.json().is_some_and(|v| !content_of(&v).is_empty()))
            .collect()
    }

    pub fn ttft(&self) -> Option<Duration> {
        self.content_events().first().map(|e| e.at - self.sent)
    }

    /// Mean gap between content events.
    pub fn itl_mean(&self) -> Option<Duration> {
        let c = self.content_events();
        if c.len() < 2 {
            return None;
        }
        Some((c[c.len() - 1].at - c[0].at) / (c.len() as u32 - 1))
    }

    pub fn last_json(&self) -> Option<Value> {
        self.events.iter().rev().find_map(Event::json)
    }
}

/// The text carried by one event.
pub fn content_of(v: &Value) -> String {
    if let Some(d) = v.get("delta").and_then(Value::as_str) {
        return d.to_string();
    }
    let mut s = String::new();
    for c in v["choices"].as_array().into_iter().flatten() {
        s.push_str(c["delta"]["content"].as_str().unwrap_or(""));
        s.push_str(c["text"].as_str().unwrap_or(""));
    }
    s
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .unwrap()
}

/// POSTs `body` and reads the SSE stream to its end, timestamping events.
pub async fn stream(client: &reqwest::Client, url: &str, body: &Value) -> Streamed {
    stream_with_timeout(client, url, body, Duration::from_secs(30)).await
}

pub async fn stream_with_timeout(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    timeout: Duration,
) -> Streamed {
    let sent = Instant::now();
    let mut resp = client
        .post(url)
        .timeout(timeout)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let headers_at = Instant::now();
    let status = resp.status().as_u16();
    let mut events = Vec::new();
    let mut pending = String::new();
    let mut error = None;
    loop {
        match resp.chunk().await {
            Ok(Some(bytes)) => {
                let at = Instant::now();
                pending.push_str(&String::from_utf8_lossy(&bytes));
                while let Some(end) = pending.find("\n\n") {
                    let block: String = pending.drain(..end + 2).collect();
                    let data: Vec<&str> = block
                        .lines()
                        .filter_map(|l| l.strip_prefix("data: "))
                        .collect();
                    if !data.is_empty() {
                        events.push(Event {
                            at,
                            data: data.join("\n"),
                        });
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    Streamed {
        status,
        sent,
        headers_at,
        events,
        error,
    }
}

/// POSTs `body` and returns status and parsed JSON (Null when not JSON).
pub async fn post(client: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Reads one metric's value from `/metrics`.
pub async fn metric(client: &reqwest::Client, base: &str, name: &str) -> f64 {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("metric {name} missing in:\n{text}"))
}

pub fn ms(n: u64) -> perfplan::units::HumanDuration {
    perfplan::units::HumanDuration(Duration::from_millis(n))
}

/// GETs `url` and parses the JSON body.
pub async fn get_json(client: &reqwest::Client, url: &str) -> Value {
    let text = client.get(url).send().await.unwrap().text().await.unwrap();
    serde_json::from_str(&text).unwrap()
}
