//! Connection setup is not hidden in TTFT: a closed loop opens its connections before its
//! clock starts (never more than the load needs), each record carries the setup time of
//! the connection it opened, TTFT starts on the established connection, and the vLLM and
//! EvalScope definitions put the setup back in, as those clients' timers do. Raw-TCP
//! servers on 127.0.0.1:0 (`framing_support`) count the connections they accept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod framing_support;

mod kept_support;
use kept_support::run_kept;
use std::time::Duration;

use framing_support::{endpoint, requests, run_on, serve, sse_response, write, Traffic, CLIENTS};
use perfplan::engine::{
    Arrivals, CancelHandle, Endpoint, Load, RunConfig, Target, Timeouts, VecSource,
};
use perfplan::metrics::{timing, MetricDefinitions};
use perfplan::record::{Outcome, RequestRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

fn answer() -> Vec<framing_support::Step> {
    vec![write(sse_response(&["a", "b"]))]
}

#[tokio::test]
async fn a_closed_loop_opens_its_connections_before_the_first_request() {
    let server = serve(|_| answer()).await;
    let load = Traffic {
        requests: 40,
        concurrency: 8,
        stream: true,
        fresh_connections: false,
    };
    let out = run_on(&endpoint(&server.url, &load, false), &load).await;
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Ok));
    assert_eq!(server.connections(), 8);
    assert!(
        out.records.iter().all(|r| r.connect.is_none()),
        "every request went out on a pre-opened connection"
    );
    let pre = out.output.preconnect.unwrap();
    assert_eq!((pre.wanted, pre.opened, pre.error), (8, 8, None));
}

#[tokio::test]
async fn connections_the_server_closed_between_runs_are_reopened_before_the_next() {
    // A keep-alive timeout of 100 ms: each connection is closed 100 ms after its answer.
    let server = serve(|_| {
        vec![
            write(sse_response(&["a"])),
            framing_support::Step::Sleep(Duration::from_millis(100)),
            framing_support::Step::Close,
        ]
    })
    .await;
    let load = Traffic {
        requests: 2,
        concurrency: 2,
        stream: true,
        fresh_connections: false,
    };
    let ep = endpoint(&server.url, &load, false);
    let first = run_on(&ep, &load).await;
    assert!(first.records.iter().all(|r| r.outcome == Outcome::Ok));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = run_on(&ep, &load).await;
    assert!(second.records.iter().all(|r| r.outcome == Outcome::Ok));
    assert_eq!(second.output.preconnect.unwrap().opened, 2);
    assert!(
        second.records.iter().all(|r| r.connect.is_none()),
        "no request met a closed connection"
    );
    assert_eq!(server.connections(), 4);
}

#[tokio::test]
async fn no_more_connections_than_requests() {
    let server = serve(|_| answer()).await;
    let load = Traffic {
        requests: 3,
        concurrency: 16,
        stream: true,
        fresh_connections: false,
    };
    let out = run_on(&endpoint(&server.url, &load, false), &load).await;
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Ok));
    assert_eq!(server.connections(), 3);
    assert_eq!(out.output.preconnect.unwrap().opened, 3);
}

#[tokio::test]
async fn an_open_loop_preconnects_up_to_max_in_flight() {
    let server = serve(|_| answer()).await;
    let target = Target {
        base_url: server.url.clone(),
        ..Target::default()
    };
    let cfg = RunConfig {
        load: Load::Open {
            rate: 200.0,
            arrivals: Arrivals::Constant,
            seed: 1,
            max_in_flight: Some(3),
        },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let ep = Endpoint::new(&target, cfg.pool_size()).unwrap();
    let mut source = VecSource::new(requests(12, true));
    let out = run_kept(
        &ep,
        &mut source,
        &cfg,
        &CancelHandle::new(),
        |_: &RequestRecord| {},
    )
    .await
    .unwrap();
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Ok));
    // Never more than 3 in flight, so the 3 opened ahead serve them all.
    assert_eq!(server.connections(), 3);
    assert!(out.records.iter().all(|r| r.connect.is_none()));
}

#[tokio::test]
async fn every_connection_is_recorded_once_through_reqwest() {
    // reqwest cannot open connections ahead: the requests that opened one carry its time.
    let server = serve(|_| answer()).await;
    let load = Traffic {
        requests: 24,
        concurrency: 4,
        stream: true,
        fresh_connections: false,
    };
    let out = run_on(&endpoint(&server.url, &load, true), &load).await;
    assert!(out.records.iter().all(|r| r.outcome == Outcome::Ok));
    assert_eq!(out.preconnect, None);
    let opened = out.records.iter().filter(|r| r.connect.is_some()).count();
    assert!(server.connections() <= 4);
    assert_eq!(opened, server.connections());
}

#[tokio::test]
async fn fresh_connections_open_one_per_request_and_record_each() {
    for (name, force_reqwest) in CLIENTS {
        let server = serve(|_| answer()).await;
        let load = Traffic {
            requests: 6,
            concurrency: 2,
            stream: true,
            fresh_connections: true,
        };
        let out = run_on(&endpoint(&server.url, &load, force_reqwest), &load).await;
        assert!(
            out.records.iter().all(|r| r.outcome == Outcome::Ok),
            "{name}"
        );
        assert_eq!(server.connections(), 6, "{name}");
        assert!(out.records.iter().all(|r| r.connect.is_some()), "{name}");
        assert_eq!(out.preconnect, None, "{name}: nothing opened ahead");
        let heads = server.seen.heads.lock().unwrap();
        assert!(
            heads
                .iter()
                .all(|h| h.to_ascii_lowercase().contains("connection: close")),
            "{name}: {heads:?}"
        );
    }
}

/// A listener whose accept queue is full (backlog 0, one connection waiting, not
/// accepted): the next SYN is dropped and retransmitted after 1 s, as when a client opens
/// hundreds of connections at once (Linux's behaviour). After `after`, it accepts and
/// answers every request.
#[cfg(target_os = "linux")]
async fn full_backlog(after: Duration) -> String {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    let listener = socket.listen(0).unwrap();
    let blocker = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        drop(blocker);
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                while let Ok(n) = sock.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    // One small request per connection: answer once its body is in.
                    if seen.ends_with(b"}") {
                        seen.clear();
                        let _ = sock.write_all(sse_response(&["a"]).as_bytes()).await;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_syn_retransmit_is_connection_setup_not_ttft() {
    for (name, force_reqwest) in CLIENTS {
        let url = full_backlog(Duration::from_millis(200)).await;
        let load = Traffic {
            requests: 1,
            concurrency: 1,
            stream: true,
            fresh_connections: true,
        };
        let ep = endpoint_with_connect_timeout(&url, &load, force_reqwest);
        let out = run_on(&ep, &load).await;
        let r = &out.records[0];
        assert_eq!(r.outcome, Outcome::Ok, "{name}: {:?}", r.error);
        let connect = r.connect.unwrap();
        assert!(connect >= Duration::from_millis(900), "{name}: {connect:?}");
        let ttft = r.ttft().unwrap();
        assert!(ttft < Duration::from_millis(500), "{name}: TTFT {ttft:?}");
        // vLLM's and EvalScope's timers start before the connection is opened.
        for defs in [MetricDefinitions::Vllm, MetricDefinitions::Evalscope] {
            let t = timing(r, defs).ttft.unwrap();
            assert!(t >= connect, "{name} {defs:?}: {t:?}");
        }
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_slow_preconnect_is_before_the_clock_and_warned_about() {
    let url = full_backlog(Duration::from_millis(200)).await;
    let load = Traffic::serial(1);
    let out = run_on(&endpoint_with_connect_timeout(&url, &load, false), &load).await;
    let r = &out.records[0];
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(r.connect, None);
    assert!(r.ttft().unwrap() < Duration::from_millis(500));
    let pre = out.output.preconnect.unwrap();
    assert_eq!((pre.opened, pre.slow), (1, 1));
    assert!(pre.warning().unwrap().contains("listen backlog"));
}

fn endpoint_with_connect_timeout(url: &str, load: &Traffic, force_reqwest: bool) -> Endpoint {
    let target = Target {
        base_url: url.to_string(),
        force_reqwest,
        fresh_connections: load.fresh_connections,
        timeouts: Timeouts {
            connect: Duration::from_secs(8),
            read: Duration::from_secs(8),
            total: Some(Duration::from_secs(20)),
        },
        ..Target::default()
    };
    Endpoint::new(&target, load.concurrency as usize).unwrap()
}
