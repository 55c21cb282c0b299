//! The simulator stamps a request's arrival when its first bytes reached the socket, not
//! when its runtime got round to the whole request: a body sent in two halves 150 ms apart
//! arrives with its first half, and the next request on the same kept-alive connection
//! gets its own arrival.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::Value;

fn head(len: usize, id: &str) -> String {
    format!(
        "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\n\
         x-request-id: {id}\r\nContent-Length: {len}\r\n\r\n"
    )
}

/// Reads one response with a Content-Length body; returns its status line.
fn read_response(reader: &mut BufReader<TcpStream>) -> String {
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let mut len = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).unwrap();
    status
}

#[test]
fn arrival_is_the_first_byte_of_each_request() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let config = SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(1)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    };
    let sim = rt.block_on(SimServer::start(config)).unwrap();
    let addr = sim.base_url().trim_start_matches("http://").to_string();
    let body = br#"{"model":"m","prompt":"hello there","max_tokens":2,"stream":false}"#;
    let mut tcp = TcpStream::connect(&addr).unwrap();
    tcp.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(tcp.try_clone().unwrap());

    let (first, second) = body.split_at(10);
    tcp.write_all(head(body.len(), "split").as_bytes()).unwrap();
    tcp.write_all(first).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    tcp.write_all(second).unwrap();
    assert!(read_response(&mut reader).contains("200"));
    std::thread::sleep(Duration::from_millis(50));
    tcp.write_all(head(body.len(), "whole").as_bytes()).unwrap();
    tcp.write_all(body).unwrap();
    assert!(read_response(&mut reader).contains("200"));

    let text = rt
        .block_on(async {
            reqwest::get(format!("{}/sim/truth", sim.base_url()))
                .await?
                .text()
                .await
        })
        .unwrap();
    let truth: Value = serde_json::from_str(&text).unwrap();
    let record = |id: &str| {
        truth["records"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["client_request_id"] == id)
            .cloned()
            .unwrap()
    };
    let us = |r: &Value, k: &str| r[k].as_u64().unwrap();
    let (split, whole) = (record("split"), record("whole"));
    let split_ttft = us(&split, "first_token_us") - us(&split, "arrival_us");
    assert!(
        split_ttft >= 140_000,
        "split request's arrival is its first bytes: {split}"
    );
    let whole_ttft = us(&whole, "first_token_us") - us(&whole, "arrival_us");
    assert!(
        whole_ttft < 100_000,
        "the next request has its own arrival: {whole}"
    );
    assert!(
        us(&whole, "arrival_us") >= us(&split, "last_token_us") + 40_000,
        "{whole}"
    );
    rt.block_on(sim.shutdown());
}
