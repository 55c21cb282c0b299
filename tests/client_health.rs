//! Client health: perfplan's TTFT measured per request against the simulator's own truth
//! (joined by the `x-request-id` the engine sends), and a CPU-starved client flagged
//! `client_bound`. Bounds are generous (a loaded CI machine); the tight figures live in
//! `bench/client.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use perfplan::api::{build_body, ApiKind, BodyInput, Prompt};
use perfplan::engine::{
    run, CancelHandle, Endpoint, Load, Outcome, Phase, PreparedRequest, RunConfig, Target,
    Timeouts, VecSource,
};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::{json, Map, Value};

fn ms(n: u64) -> HumanDuration {
    HumanDuration(Duration::from_millis(n))
}

/// Chat streams of `tokens` output tokens; one request per entry of `tokens`.
fn requests(tokens: &[u32], phase: Phase) -> Vec<PreparedRequest> {
    tokens
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let fields: Map<String, Value> = json!({"max_tokens": n, "ignore_eos": true})
                .as_object()
                .cloned()
                .unwrap();
            let input = BodyInput {
                model: "m",
                prompt: &Prompt::Text("hello".into()),
                fields: &fields,
                stream: true,
                include_usage: true,
                reject_fields: &[],
            };
            let (path, body) = build_body(ApiKind::Chat, &input).unwrap();
            PreparedRequest {
                item: i as u64,
                phase,
                kind: ApiKind::Chat,
                path: path.into(),
                body,
                stream: true,
                client_input_tokens: None,
            }
        })
        .collect()
}

/// Closed loop at concurrency 256, the engine on one current-thread runtime (as the
/// runner does) and the simulator on its own thread. Every measured request is matched to
/// the server's record by id; mean(client TTFT − server arrival→first token) ≤ 5 ms.
#[test]
fn ttft_error_against_sim_truth_at_concurrency_256() {
    let c = 256usize;
    let sim_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let sim = sim_rt
        .block_on(SimServer::start(SimConfig {
            ttft_base: ms(50),
            itl_base: ms(5),
            max_num_seqs: 4096,
            itl_knee: 4096,
            ..SimConfig::default()
        }))
        .unwrap();
    // Warmup streams of staggered lengths open the connections and spread the slots'
    // hand-over, so measured requests start the way a steady closed loop does.
    let stagger: Vec<u32> = (0..c).map(|i| 2 + (i % 16) as u32).collect();
    let mut reqs = requests(&stagger, Phase::Warmup);
    reqs.extend(requests(&vec![4; 3 * c], Phase::Measured));
    let target = Target {
        base_url: sim.base_url(),
        timeouts: Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(10),
            total: Some(Duration::from_secs(30)),
        },
        ..Target::default()
    };
    let cfg = RunConfig {
        load: Load::Closed {
            concurrency: c as u32,
        },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let ep = Endpoint::new(&target, cfg.pool_size())
        .unwrap()
        .with_request_ids("t");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(async {
        let mut source = VecSource::new(reqs);
        let mut sink = |_: &perfplan::engine::RequestRecord| {};
        run(&ep, &mut source, &cfg, &CancelHandle::new(), &mut sink)
            .await
            .unwrap()
    });
    let truth: HashMap<String, (u64, u64)> = sim
        .truth()
        .into_iter()
        .filter_map(|t| Some((t.client_request_id?, (t.arrival_us, t.first_token_us?))))
        .collect();
    sim_rt.block_on(sim.shutdown());
    let mut errors_ms = Vec::new();
    for r in out.records.iter().filter(|r| r.phase == Phase::Measured) {
        assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
        let (arrival, first) = truth[&format!("t-{}", r.index)];
        let server = Duration::from_micros(first - arrival);
        let client = r.first_chunk.unwrap() - r.sent;
        errors_ms.push((client.as_secs_f64() - server.as_secs_f64()) * 1e3);
    }
    assert_eq!(errors_ms.len(), 3 * c);
    errors_ms.sort_by(f64::total_cmp);
    let mean = errors_ms.iter().sum::<f64>() / errors_ms.len() as f64;
    let p99 = errors_ms[errors_ms.len() * 99 / 100];
    eprintln!("c={c}: TTFT error vs truth mean {mean:+.2} ms, p99 {p99:+.2} ms");
    assert!(mean >= -1.0, "the client cannot see the first token before the server sends it: {mean} ms");
    assert!(mean <= 5.0, "TTFT error mean {mean:.2} ms at c={c} (bound 5 ms)");
}

/// Runs `perfplan run` on CPU 0 next to a busy loop on the same CPU, at an open-loop rate
/// one starved core cannot send: the run must carry the `client_bound` warning (stored
/// with the run and in its extras). Skipped where `taskset` is missing.
#[test]
fn starved_client_is_flagged_client_bound() {
    if Command::new("taskset").arg("-V").output().is_err() {
        eprintln!("taskset not found: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("starved.toml");
    std::fs::write(
        &plan,
        r#"
[plan]
name = "starved"
seed = 1

[endpoints.sim]
base_url = "sim://starved"

[endpoints.sim.sim]
ttft_base = "1ms"
itl_base = "1ms"
max_num_seqs = 8192

[models.m]
served_name = "m"

[datasets.hello]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 2
ignore_eos = true
stream = true

[matrix]
load = { rate = 4000, duration = "1500ms", requests = 6000 }
"#,
    )
    .unwrap();
    let mut busy = Command::new("taskset")
        .args(["-c", "0", "sh", "-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = dir.path().join("out");
    let status = Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_perfplan"), "run"])
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .output();
    let _ = busy.kill(); // by its own PID
    let _ = busy.wait();
    let status = status.unwrap();
    assert!(
        status.status.code() == Some(0) || status.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let (warnings, extras) = run_row(&out.join("results.db"));
    assert!(
        warnings.iter().any(|w| w.starts_with("client_bound: ")),
        "{warnings:?}"
    );
    assert!(extras["client_bound"].is_string(), "{extras}");
}

fn run_row(db: &Path) -> (Vec<String>, Value) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let (w, e): (String, String) = conn
        .query_row("SELECT warnings_json, extras_json FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    (
        serde_json::from_str(&w).unwrap(),
        serde_json::from_str(&e).unwrap(),
    )
}
