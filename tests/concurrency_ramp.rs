//! Concurrency ramps, through the CLI against the in-process simulator: the closed loop's
//! requests in flight (read back from the stored send and end times) follow the ramp's
//! slots exactly, step by step, rising at once and falling without a cancelled request;
//! each step's metrics rise with the load once the slots exceed the simulator's two batch
//! slots; the ramp ends the run, and `requests` or `duration` end it sooner. Each run
//! lasts 0.3–2 s.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;

use cli_support::{perfplan, report_json, run};

/// A simulator with two batch slots and requests of ~50 ms (TTFT 10 ms, 8 tokens 5 ms
/// apart): past two in flight, requests queue and their TTFT grows with the queue.
const HEAD: &str = r#"
[plan]
name = "concurrency-ramp"
seed = 5

[endpoints.sim]
base_url = "sim://concurrency-ramp"

[endpoints.sim.sim]
ttft_base = "10ms"
itl_base = "5ms"
max_num_seqs = 2

[models.m]

[datasets.p]
kind = "prompt"
text = "hi"

[defaults]
output_tokens = 8
ignore_eos = true
"#;

/// One stored request: (sent, end) in µs from the run's start, and its outcome.
fn requests(db: &Path, run_id: &str) -> Vec<(i64, i64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT sent_us, end_us, outcome FROM requests WHERE run_id = ?1")
        .unwrap();
    stmt.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The most requests in flight at once within [from, to) µs (a request is in flight from
/// its send to its end; an end and a send at the same µs are a handover, not an overlap).
fn max_in_flight(reqs: &[(i64, i64, String)], from: i64, to: i64) -> usize {
    let mut events: Vec<(i64, i32)> = reqs
        .iter()
        .flat_map(|(s, e, _)| [(*s, 1), (*e, -1)])
        .collect();
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (t, d) in events {
        now += d;
        if t >= from && t < to {
            most = most.max(now);
        }
    }
    // In flight at `from` itself (sent before, ending after).
    let at_start = reqs
        .iter()
        .filter(|(s, e, _)| *s < from && *e > from)
        .count() as i32;
    most.max(at_start) as usize
}

fn metric(step: &serde_json::Value, name: &str) -> f64 {
    step["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name} is null: {step}"))
}

#[test]
fn in_flight_follows_a_rising_series_and_ttft_rises_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let load = r#"load = { concurrency_ramp = { concurrencies = [1, 2, 4, 8], step = "500ms" } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    let id = runs[0]["id"].as_str().unwrap();
    let reqs = requests(&db, id);
    let steps = runs[0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4, "{steps:?}");
    for (k, (step, c)) in steps.iter().zip([1usize, 2, 4, 8]).enumerate() {
        assert_eq!(step["concurrency"].as_f64(), Some(c as f64), "{step}");
        assert!(step.get("rate").is_none(), "{step}");
        // The engine's requests in flight are the step's concurrency, exactly.
        let (from, to) = (k as i64 * 500_000, (k as i64 + 1) * 500_000);
        assert_eq!(max_in_flight(&reqs, from, to), c, "step {}", k + 1);
    }
    // Every request is done and sent before the ramp's end; the run ends with the ramp.
    assert!(reqs.iter().all(|r| r.2 == "ok"), "{reqs:?}");
    // The send stamp is taken a moment after the decision to send (the decision before
    // 2 s, the stamp on a loaded two-core machine up to a few ms later): 10 ms of slack,
    // far less than a request's own length here, so a request begun after the end fails.
    let last_sent = reqs.iter().map(|r| r.0).max().unwrap();
    assert!(
        last_sent < 2_010_000,
        "a request sent at {last_sent} µs, after 2 s"
    );
    let last_end = reqs.iter().map(|r| r.1).max().unwrap();
    assert!(last_end < 2_600_000, "ended at {last_end} µs");
    // Counts agree: the steps' requests are the run's.
    let in_steps: f64 = steps.iter().map(|s| metric(s, "requests_ok")).sum();
    assert_eq!(in_steps, reqs.len() as f64);
    // TTFT stays at the simulator's own up to its two slots, then grows with the queue;
    // throughput stops growing once the slots are full.
    let ttft: Vec<f64> = steps.iter().map(|s| metric(s, "ttft_p50")).collect();
    assert!(ttft[1] < 1.5 * ttft[0], "TTFT {ttft:?}");
    assert!(
        ttft[2] > 2.0 * ttft[1] && ttft[3] > 1.5 * ttft[2],
        "TTFT {ttft:?}"
    );
    let tps: Vec<f64> = steps.iter().map(|s| metric(s, "output_tps")).collect();
    assert!(
        tps[1] > 1.5 * tps[0] && tps[3] < 1.3 * tps[2],
        "tok/s {tps:?}"
    );

    // The per-step table in the text report, and its charts in the HTML one.
    let out = dir.path().join("out");
    let o = perfplan(&["report", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("ramp steps") && text.contains("concurrency"),
        "{text}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("TTFT p50 per concurrency step"), "no chart");
}

#[test]
fn a_fall_cancels_nothing_and_requests_or_duration_end_a_ramp_sooner() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let load = r#"load = [
  { concurrency_ramp = { concurrencies = [6, 2], step = "600ms" } },
  { concurrency_ramp = { from = 1, to = 4, over = "2s" }, requests = 10 },
  { concurrency_ramp = { from = 2, to = 4, over = "2s", shape = "step", steps = 2 }, duration = "300ms" },
]"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    let id = |k: usize| runs[k]["id"].as_str().unwrap().to_string();

    let fall = requests(&db, &id(0));
    assert!(fall.iter().all(|r| r.2 == "ok"), "{fall:?}");
    assert_eq!(max_in_flight(&fall, 0, 600_000), 6);
    // After the fall no request starts while two others are in flight: the six of the
    // first step finish (none cancelled), and once they have, two are in flight.
    for (s, _, _) in fall.iter().filter(|r| r.0 >= 600_000) {
        let others = fall.iter().filter(|(a, b, _)| a < s && b > s).count();
        assert!(others < 2, "sent at {s} µs beside {others} in flight");
    }
    assert_eq!(max_in_flight(&fall, 950_000, 1_200_000), 2);

    // `requests = 10`: ten requests, then the run ends before its ramp does.
    assert_eq!(requests(&db, &id(1)).len(), 10);
    // `duration = "300ms"`: nothing sent after it, at the first step's two slots.
    let short = requests(&db, &id(2));
    assert!(short.iter().all(|r| r.0 < 300_000), "{short:?}");
    assert_eq!(max_in_flight(&short, 0, 300_000), 2);
}

#[test]
fn expand_shows_a_concurrency_ramp_and_rejects_a_bad_one_at_its_load() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let good = r#"load = [{ concurrency_ramp = { concurrencies = [1, 4, 16], step = "10s" } }, { concurrency_ramp = { from = 1, to = 64, over = "60s", shape = "step", steps = 4 }, repeat = 2 }]"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{good}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("c=1,4,16 step 10s"), "{text}");
    assert!(text.contains("c=1..64 step over 60s steps=4"), "{text}");
    assert_eq!(text.matches("c=1..64").count(), 2, "two repeats: {text}");

    let bad = r#"load = { concurrency_ramp = { from = 1, over = "2s", shape = "step" }, concurrency = 4, warmup = 2, arrivals = "constant" }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{bad}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    for said in [
        "a concurrency_ramp needs `to`",
        "a step concurrency_ramp needs `steps`",
        "drop `concurrency`",
        "no warmup",
        "apply to open loops",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
    let text = std::fs::read_to_string(&plan).unwrap();
    let line = text.lines().position(|l| l.starts_with("load =")).unwrap() + 1;
    assert!(err.contains(&format!("plan.toml:{line}:8")), "{err}");

    // A misspelt shape is named at its value, with the shapes there are.
    let typo = r#"load = { concurrency_ramp = { from = 1, to = 8, over = "2s", shape = "expo" } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{typo}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("concurrency_ramp.shape`: expected one of `linear`, `exponential`, `step`")
            && err.contains("did you mean `exponential`?"),
        "{err}"
    );
    let col = typo.find("\"expo\"").unwrap() + 1;
    assert!(err.contains(&format!("plan.toml:{line}:{col}")), "{err}");
}
