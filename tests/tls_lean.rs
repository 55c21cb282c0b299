//! HTTPS on the lean HTTP/1.1 client, end to end against local TLS servers with
//! certificates made here: the load of an `https://` endpoint takes the lean client (its
//! pool, its read loop, its timing points); the connections a tier keeps open are opened
//! and handshaken before the clock (a slow handshake is in the run's pre-connect facts,
//! never in TTFT); connections the server closes are reopened, counted and timed, and
//! resume their TLS session when the server offers it (full handshakes when it refuses);
//! `fresh_connections` measures the cold TLS path; the simulator serves HTTPS too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
mod framing_support;
mod kept_support;
mod tls_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use framing_support::{
    requests, serve_tls, sse, sse_response, with_length, write, At, Step, Traffic,
};
use perfplan::control::Tls;
use perfplan::engine::{CancelHandle, Endpoint, Load, RunConfig, Target, Timeouts, VecSource};
use perfplan::metrics::{summarize, SummaryOptions};
use perfplan::record::{Outcome, RequestRecord};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use tokio_rustls::rustls::ServerConfig;

/// A slow TLS server: each handshake starts this long after the TCP accept.
const SLOW_HANDSHAKE: Duration = Duration::from_millis(300);

/// Below the slow handshake with a wide margin either way: a handshake the client timed
/// takes longer (its clock may start a little after the server's, when the client's task
/// runs late), an answer of the scripted server arrives sooner.
const HALFWAY: Duration = Duration::from_millis(200);

/// A server configuration for 127.0.0.1 and the PEM file of the CA that signed it, in `dir`.
fn certified(dir: &Path, refuse_resumption: bool) -> (ServerConfig, Tls) {
    let (ca_pem, issuer) = tls_support::ca();
    let identity = tls_support::leaf(&issuer, &["127.0.0.1"], false);
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();
    let config = match refuse_resumption {
        false => tls_support::server(identity),
        true => tls_support::server_without_resumption(identity),
    };
    let tls = Tls {
        ca_file: Some(ca_file),
        ..Tls::default()
    };
    (config, tls)
}

fn endpoint(url: &str, tls: &Tls, load: &Traffic) -> Endpoint {
    let target = Target {
        base_url: url.to_string(),
        tls: tls.clone(),
        fresh_connections: load.fresh_connections,
        timeouts: Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(10),
            total: Some(Duration::from_secs(20)),
        },
        ..Target::default()
    };
    Endpoint::new(&target, load.concurrency as usize).unwrap()
}

async fn run(ep: &Endpoint, load: &Traffic) -> kept_support::Ran {
    let cfg = RunConfig {
        load: Load::Closed {
            concurrency: load.concurrency,
        },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let mut source = VecSource::new(requests(load.requests, true));
    kept_support::run_kept(ep, &mut source, &cfg, &CancelHandle::new(), |_| {})
        .await
        .unwrap()
}

fn closed_loop(requests: usize, concurrency: u32) -> Traffic {
    Traffic {
        requests,
        concurrency,
        stream: true,
        fresh_connections: false,
    }
}

fn answer(_: At) -> Vec<Step> {
    vec![write(sse_response(&["a", "b"]))]
}

/// An answer that closes its connection (`Connection: close`): every request after the
/// first wave opens a connection of its own.
fn answer_and_close(_: At) -> Vec<Step> {
    let closing = with_length(
        "HTTP/1.1 200 OK",
        "Content-Type: text/event-stream\r\nConnection: close\r\n",
        &sse(&["a", "b"]),
    );
    vec![write(closing), Step::Close]
}

fn all_ok(records: &[RequestRecord]) {
    for r in records {
        assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    }
}

/// Requests that opened their connection during the run.
fn opened(records: &[RequestRecord]) -> Vec<&RequestRecord> {
    records.iter().filter(|r| r.connect.is_some()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_connections_are_handshaken_before_the_clock_by_the_lean_client() {
    let dir = tempfile::tempdir().unwrap();
    let (config, tls) = certified(dir.path(), false);
    let server = serve_tls(Arc::new(config), SLOW_HANDSHAKE, answer).await;
    let load = closed_loop(24, 6);
    let out = run(&endpoint(&server.url, &tls, &load), &load).await;
    all_ok(&out.records);
    // Pre-connecting is the lean client's: reqwest's pool cannot.
    let pre = out.output.preconnect.clone().expect("pre-connected");
    assert_eq!((pre.wanted, pre.opened, pre.error.clone()), (6, 6, None));
    assert_eq!(pre.tls_handshakes, 6);
    assert!(pre.tls_handshake_max >= HALFWAY, "{pre:?}");
    assert!(pre.slowest < HALFWAY, "the TCP part alone: {pre:?}");
    let facts = pre.facts();
    assert_eq!(facts.tls_handshakes, Some(6));
    assert!(
        facts.tls_handshake_mean_ms.is_some_and(|ms| ms >= 200.0),
        "{facts:?}"
    );
    assert_eq!(server.connections(), 6);
    for r in &out.records {
        assert_eq!(
            (r.connect, r.tls),
            (None, None),
            "sent on an open connection"
        );
        let ttft = r.ttft().unwrap();
        assert!(ttft < HALFWAY, "no handshake inside TTFT: {ttft:?}");
        // Under TLS too the answer is timed by the kernel's stamps of the TCP reads
        // beneath (where the kernel gives them: Linux, after its first moment).
        let clock = r.read_clock.expect("answer read");
        assert!(clock.first_delay.is_some(), "{clock:?}");
    }
    // Where the kernel gives receive stamps, TLS answers are timed by them too.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let probe = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    if perfplan::rx_stamp::StampedTcp::new(probe, true).kernel() {
        assert!(
            out.records
                .iter()
                .any(|r| r.read_clock.is_some_and(|c| c.kernel)),
            "no answer over TLS timed by the kernel"
        );
    }
    let heads = server.seen.heads.lock().unwrap().clone();
    assert!(heads[0].contains("User-Agent: perfplan/"), "{}", heads[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_server_closes_are_reopened_counted_timed_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let (config, tls) = certified(dir.path(), false);
    // A server that closes each connection after its second answer, without a word (a
    // request limit per connection): the next request on it meets the close and is sent
    // again on a new connection, timed from there.
    let server = serve_tls(Arc::new(config), SLOW_HANDSHAKE, |at: At| {
        let mut steps = vec![write(sse_response(&["a", "b"]))];
        if at.request == 1 {
            steps.push(Step::Close);
        }
        steps
    })
    .await;
    let load = closed_loop(24, 4);
    let out = run(&endpoint(&server.url, &tls, &load), &load).await;
    all_ok(&out.records);
    let reopened = opened(&out.records);
    assert_eq!(
        reopened.len(),
        server.connections() - 4,
        "one per new connection"
    );
    assert!(reopened.len() >= 4, "{}", reopened.len());
    for r in &reopened {
        let tls = r.tls.expect("a TLS handshake per new connection");
        assert!(tls.took >= HALFWAY, "{tls:?}");
        assert!(r.connect.unwrap() >= tls.took);
        assert!(r.ttft().unwrap() < HALFWAY, "not inside TTFT");
    }
    let resumed = reopened.iter().filter(|r| r.tls.unwrap().resumed).count();
    assert!(
        resumed > 0,
        "the server offers resumption: {resumed} resumed"
    );
    let s = summarize(&out.records, &SummaryOptions::default());
    assert_eq!(s.connections.opened, reopened.len() as u64);
    assert_eq!(s.connections.tls_handshakes, reopened.len() as u64);
    assert_eq!(s.connections.tls_resumed, resumed as u64);
    let min = s.values["tls_handshake_min"].unwrap();
    assert!(min >= 200.0, "tls_handshake_min {min} ms");
}

/// Reconnects of a tier whose every connection the server closes after one answer: the
/// records of the second wave's requests (each opened its connection).
async fn reconnect_wave(refuse_resumption: bool) -> Vec<RequestRecord> {
    let dir = tempfile::tempdir().unwrap();
    let (config, tls) = certified(dir.path(), refuse_resumption);
    let server = serve_tls(Arc::new(config), Duration::ZERO, answer_and_close).await;
    let load = closed_loop(32, 16);
    let out = run(&endpoint(&server.url, &tls, &load), &load).await;
    all_ok(&out.records);
    assert_eq!(server.connections(), 32);
    let reopened: Vec<RequestRecord> = opened(&out.records).into_iter().cloned().collect();
    assert_eq!(reopened.len(), 16);
    assert!(reopened.iter().all(|r| r.tls.is_some()));
    reopened
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wave_of_reconnects_resumes_and_a_refusing_server_gets_full_handshakes() {
    // 16 connections closed together: each reconnect finds a ticket of its own (rustls's
    // own cache would keep 8 a server).
    let offered = reconnect_wave(false).await;
    let resumed = offered.iter().filter(|r| r.tls.unwrap().resumed).count();
    assert!(resumed > 8, "{resumed} of 16 resumed");
    let refused = reconnect_wave(true).await;
    assert!(
        refused.iter().all(|r| !r.tls.unwrap().resumed),
        "a server that keeps no session resumes none"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_connections_measure_the_cold_tls_path() {
    let dir = tempfile::tempdir().unwrap();
    let (config, tls) = certified(dir.path(), false);
    let server = serve_tls(Arc::new(config), Duration::ZERO, answer).await;
    let load = Traffic {
        fresh_connections: true,
        ..closed_loop(8, 2)
    };
    let out = run(&endpoint(&server.url, &tls, &load), &load).await;
    all_ok(&out.records);
    assert!(out.output.preconnect.is_none(), "nothing opened ahead");
    assert_eq!(server.connections(), 8);
    for r in &out.records {
        let tls = r.tls.expect("each request its own handshake");
        assert!(!tls.resumed, "no resumption on the cold path");
        assert!(r.connect.unwrap() >= tls.took);
    }
    let heads = server.seen.heads.lock().unwrap().clone();
    assert!(heads.iter().all(|h| h.contains("Connection: close")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_named_in_each_record() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = certified(dir.path(), false);
    let server = serve_tls(Arc::new(config), Duration::ZERO, answer).await;
    let load = closed_loop(3, 1);
    let out = run(&endpoint(&server.url, &Tls::default(), &load), &load).await;
    let pre = out.output.preconnect.clone().unwrap();
    assert!(pre.error.unwrap().contains("unknown issuer"));
    for r in &out.records {
        assert_eq!(r.outcome, Outcome::Connect);
        let e = r.error.clone().unwrap();
        assert!(
            e.contains("unknown issuer") && e.contains("tls.ca_file"),
            "{e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_serves_https_and_records_its_truth() {
    let dir = tempfile::tempdir().unwrap();
    let (config, tls) = certified(dir.path(), false);
    let sim = SimServer::start_tls(
        SimConfig {
            ttft_base: HumanDuration(Duration::from_millis(20)),
            itl_base: HumanDuration(Duration::from_millis(1)),
            ..SimConfig::default()
        },
        Arc::new(config),
    )
    .await
    .unwrap();
    assert!(sim.base_url().starts_with("https://127.0.0.1:"));
    let load = closed_loop(12, 4);
    let ep = endpoint(&sim.base_url(), &tls, &load).with_request_ids("tls", 0);
    let out = run(&ep, &load).await;
    all_ok(&out.records);
    assert_eq!(out.output.preconnect.unwrap().tls_handshakes, 4);
    let truth = sim.truth();
    assert_eq!(truth.len(), 12);
    // The server's own TTFT (arrival to first token) is inside the client's, request by
    // request (joined by `x-request-id`).
    for r in &out.records {
        let id = perfplan::engine::request_id("tls", r.index);
        let t = truth
            .iter()
            .find(|t| t.client_request_id.as_deref() == Some(id.as_str()))
            .unwrap();
        let server = Duration::from_micros(t.first_token_us.unwrap() - t.arrival_us);
        let client = r.ttft().unwrap();
        assert!(client >= server, "client {client:?} < server {server:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_says_how_many_connections_it_reopened_and_how_many_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = certified(dir.path(), false);
    let server = serve_tls(Arc::new(config), Duration::ZERO, |at: At| {
        let mut steps = vec![write(sse_response(&["a", "b"]))];
        if at.request == 2 {
            steps.push(Step::Close);
        }
        steps
    })
    .await;
    let plan = format!(
        r#"[plan]
name = "reopened"
[endpoints.gw]
base_url = "{}"
connection_test = false
telemetry = {{ enabled = false }}
tls = {{ ca_file = "ca.pem" }}
[models.m]
[datasets.p]
kind = "prompt"
text = "hello"
[defaults]
output_tokens = 2
[matrix]
load = {{ concurrency = 4, requests = 24 }}
"#,
        server.url
    );
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    let o = cli_support::perfplan(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(0), "{text}");
    let db = out.join("results.db");
    let rows: Vec<Vec<Option<String>>> =
        cli_support::query(&db, "SELECT warnings_json, extras_json FROM runs");
    let warnings = rows[0][0].clone().unwrap();
    let extras: serde_json::Value = serde_json::from_str(rows[0][1].as_deref().unwrap()).unwrap();
    let opened: Vec<Vec<Option<i64>>> = cli_support::query(
        &db,
        "SELECT COUNT(tls_handshake_us), COALESCE(SUM(tls_resumed), 0) FROM requests \
         WHERE phase = 'measured'",
    );
    let (handshakes, resumed) = (opened[0][0].unwrap(), opened[0][1].unwrap());
    assert!(handshakes > 0, "{extras}");
    assert_eq!(extras["connections"]["opened"], handshakes);
    assert_eq!(extras["connections"]["tls_handshakes"], handshakes);
    assert_eq!(extras["connections"]["tls_resumed"], resumed);
    assert_eq!(extras["preconnect"]["tls_handshakes"], 4);
    assert!(
        warnings.contains(&format!(
            "{handshakes} measured requests opened a new connection"
        )) && warnings.contains(&format!("TLS handshakes {resumed} resumed of {handshakes}")),
        "{warnings}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_certificate_serving_as_a_server_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (identity, pem) = tls_support::self_signed_ca(&["127.0.0.1"]);
    let ca_file = dir.path().join("cert.pem");
    std::fs::write(&ca_file, pem).unwrap();
    let server = serve_tls(
        Arc::new(tls_support::server(identity)),
        Duration::ZERO,
        answer,
    )
    .await;
    let tls = Tls {
        ca_file: Some(ca_file),
        ..Tls::default()
    };
    let load = closed_loop(1, 1);
    let out = run(&endpoint(&server.url, &tls, &load), &load).await;
    let e = out.records[0].error.clone().unwrap();
    assert!(
        e.contains("is a CA certificate") && e.contains("CA:FALSE"),
        "{e}"
    );
}
