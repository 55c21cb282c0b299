//! Load ramps, through the CLI against the in-process simulator: a rate series' steps
//! get their planned requests and their own metrics (rps near each step's rate while
//! the simulator keeps up; TTFT rising once its two batch slots saturate), and a linear
//! ramp's sends follow its planned cumulative count ∫ rate dt, for Poisson and
//! constant arrivals. Each run lasts 2–3 s.

mod cli_support;

use cli_support::{perfplan, query, report_json, run};

/// A simulator with two batch slots and requests of ~45 ms (TTFT 10 ms, 8 tokens 5 ms
/// apart): it keeps up with about 2 / 0.045 ≈ 44 req/s.
const HEAD: &str = r#"
[plan]
name = "ramp"
seed = 5

[endpoints.sim]
base_url = "sim://ramp"

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

fn metric(step: &serde_json::Value, name: &str) -> f64 {
    step["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name} is null: {step}"))
}

#[test]
fn a_rate_series_gets_each_steps_load_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let load = r#"load = { ramp = { rates = [5, 20, 60], step = "1s" }, arrivals = "constant" }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    let steps = runs[0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{steps:?}");
    let mut planned = 0.0;
    for (k, (step, rate)) in steps.iter().zip([5.0, 20.0, 60.0]).enumerate() {
        assert_eq!(step["rate"].as_f64(), Some(rate));
        assert_eq!(step["start_s"].as_f64(), Some(k as f64));
        assert_eq!(step["end_s"].as_f64(), Some(k as f64 + 1.0));
        // Constant arrivals: each step holds its rate × 1 s requests (±1 at a boundary).
        let sent = metric(step, "requests_ok") + metric(step, "requests_failed");
        assert!((sent - rate).abs() <= 1.0, "step {k}: {sent} for {rate}");
        assert!(
            step["metrics"]["requests_ok"].is_u64(),
            "counts are integers"
        );
        planned += sent;
    }
    // Counts agree end to end: rows stored = the steps' requests = the run's.
    let rows: Vec<Vec<Option<i64>>> = query(&db, "SELECT COUNT(*) FROM requests");
    assert_eq!(rows[0][0], Some(planned as i64));
    assert_eq!(runs[0]["metrics"]["requests_ok"].as_f64(), Some(planned));
    // While the simulator keeps up (5 and 20 req/s), each step's rps is its rate ± 20%.
    for (step, rate) in steps[..2].iter().zip([5.0, 20.0]) {
        let rps = metric(step, "rps");
        assert!((rps - rate).abs() <= 0.2 * rate, "rps {rps} at {rate}");
    }
    // At 60 req/s it cannot (two slots of ~45 ms): the queue grows, throughput stays
    // below the offered rate and TTFT rises with the load.
    let (t1, t2, t3) = (
        metric(&steps[0], "ttft_p50"),
        metric(&steps[1], "ttft_p50"),
        metric(&steps[2], "ttft_p50"),
    );
    assert!(metric(&steps[2], "rps") < 0.85 * 60.0, "{:?}", steps[2]);
    assert!(
        t3 > 3.0 * t1 && t3 > t2 && t2 >= 0.8 * t1,
        "TTFT {t1} {t2} {t3}"
    );
    assert!(metric(&steps[2], "output_tps") > metric(&steps[0], "output_tps"));

    // The per-step table in the text report, and its charts in the HTML one.
    let out = dir.path().join("out");
    let o = perfplan(&["report", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("ramp steps") && text.contains("rate (req/s)"),
        "{text}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>Ramp steps</h2>") && html.contains("TTFT p50 per ramp step"));
}

#[test]
fn a_linear_ramps_sends_follow_its_planned_count() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    // 10 → 90 req/s over 2 s: Λ(t) = 10 t + 20 t², 100 requests in all.
    let ramp = r#"ramp = { from = 10, to = 90, over = "2s", steps = 2 }"#;
    let load = format!(
        "load = [{{ {ramp} }}, {{ {ramp}, arrivals = \"constant\" }}, {{ {ramp}, requests = 30 }}]"
    );
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    let lambda = |t: f64| 10.0 * t + 20.0 * t * t;
    // Poisson sends given their total of 100 fall before t like a binomial count,
    // √(100 p (1 − p)) deep with p = Λ(t) / 100: allowed 3.5 of those (and 1). Evenly
    // spaced ones: within 2.
    let poisson = |t: f64| {
        let p = lambda(t) / 100.0;
        3.5 * (100.0 * p * (1.0 - p)).sqrt() + 1.0
    };
    let even = |_: f64| 2.0;
    let margins: [&dyn Fn(f64) -> f64; 2] = [&poisson, &even];
    for (ordinal, margin) in [1, 2].into_iter().zip(margins) {
        let id = runs[ordinal - 1]["id"].as_str().unwrap();
        let sent: Vec<Vec<Option<i64>>> = query(
            &db,
            &format!(
                "SELECT sent_us, intended_us FROM requests WHERE run_id = '{id}' ORDER BY sent_us"
            ),
        );
        assert_eq!(sent.len(), 100, "run {ordinal}");
        let times: Vec<f64> = sent.iter().map(|r| r[0].unwrap() as f64 / 1e6).collect();
        // Sent on time: within 50 ms of the schedule (a loaded CI machine's margin).
        for r in &sent {
            assert!((r[0].unwrap() - r[1].unwrap()).abs() < 50_000, "{r:?}");
        }
        // Sends before t match Λ(t) at every tenth of the ramp.
        for k in 1..10 {
            let t = 0.2 * f64::from(k);
            let seen = times.iter().filter(|x| **x < t).count() as f64;
            assert!(
                (seen - lambda(t)).abs() <= margin(t),
                "run {ordinal} at {t} s: {seen} sent, {} planned",
                lambda(t)
            );
        }
        // The two windows of `steps = 2`: mean rates 30 and 70 req/s.
        let steps = runs[ordinal - 1]["steps"].as_array().unwrap();
        let rates: Vec<f64> = steps.iter().map(|s| s["rate"].as_f64().unwrap()).collect();
        assert_eq!(rates, [30.0, 70.0]);
    }
    // `requests` takes the ramp's first ones: 30 requests, all sent in its first second
    // (Λ(1) = 30).
    assert_eq!(runs[2]["metrics"]["requests_ok"].as_f64(), Some(30.0));
    let last = runs[2]["steps"][1]["metrics"]["requests_ok"]
        .as_u64()
        .unwrap();
    assert!(last <= 3, "{last} of 30 in the second window");
}

#[test]
fn expand_shows_a_ramp_and_rejects_a_bad_one_at_its_load() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let good = r#"load = [{ ramp = { rates = [5, 20], step = "1s" } }, { ramp = { from = 1, to = 64, over = "60s", shape = "exponential" } }]"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{good}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("rates 5,20/s step 1s"), "{text}");
    assert!(text.contains("ramp 1..64/s exponential over 60s"), "{text}");

    let bad = r#"load = { ramp = { from = 1, over = "2s", shape = "step" }, concurrency = 4 }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{bad}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    for said in [
        "a ramp needs `to`",
        "needs `steps`",
        "drop `rate` and `concurrency`",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
    // Located: the plan's file and the line of the load.
    let text = std::fs::read_to_string(&plan).unwrap();
    let line = text.lines().position(|l| l.starts_with("load =")).unwrap() + 1;
    assert!(err.contains(&format!("plan.toml:{line}:8")), "{err}");
}

#[test]
fn a_repeated_ramp_is_a_group_whose_cold_repeats_send_at_fresh_times() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let load = r#"load = { ramp = { rates = [10, 30], step = "300ms" }, repeat = 2 }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let times = |k: usize| -> Vec<Option<i64>> {
        let id = runs[k]["id"].as_str().unwrap();
        let q =
            format!("SELECT intended_us FROM requests WHERE run_id = '{id}' ORDER BY intended_us");
        query(&db, &q).into_iter().map(|r| r[0]).collect()
    };
    // Each repeat is a ramp of its own, with its steps; a cold repeat draws its own
    // Poisson schedule from its own seed.
    for run in &runs {
        assert_eq!(run["steps"].as_array().map(Vec::len), Some(2), "{run}");
    }
    assert_ne!(times(0), times(1));
    // The groups table holds them as one group of two.
    let o = perfplan(&["report", dir.path().join("out").to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("2/2"), "{text}");
}

/// A sharded ramp merges with its per-step metrics: the shards sent the one schedule
/// between them (every other send each, both started at one instant), so the merged
/// run's steps hold the unsharded run's planned requests, step by step.
#[test]
fn a_merged_ramp_keeps_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let load = r#"load = { ramp = { rates = [10, 30], step = "1s" }, arrivals = "constant" }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let whole = report_json(&run(&plan, &dir.path().join("whole")));
    let start = std::time::SystemTime::now() + std::time::Duration::from_secs(3);
    let start_s = start
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let shards: Vec<_> = (1..=2)
        .map(|k| {
            let out = dir.path().join(format!("shard{k}"));
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_perfplan"))
                .args([
                    "run",
                    plan.to_str().unwrap(),
                    "--out",
                    out.to_str().unwrap(),
                ])
                .args(["--shard", &format!("{k}/2"), "--start-at"])
                .arg(format!("{start_s:.3}"))
                .args(["--barrier", "off"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (out, child)
        })
        .collect();
    let shards: Vec<_> = shards
        .into_iter()
        .map(|(out, child)| {
            let o = child.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            out
        })
        .collect();
    let merged = dir.path().join("merged");
    let o = perfplan(&[
        "merge",
        merged.to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let merged = report_json(&merged.join("results.db"));
    let (a, b) = (
        whole[0]["steps"].as_array().unwrap(),
        merged[0]["steps"]
            .as_array()
            .expect("the merged run's steps"),
    );
    assert_eq!(a.len(), b.len());
    let sent = |s: &serde_json::Value| metric(s, "requests_ok") + metric(s, "requests_failed");
    for (sa, sb) in a.iter().zip(b) {
        assert_eq!(sa["rate"], sb["rate"]);
        // A step holds the requests sent in it: one sent late on a busy machine (the
        // arrival due just before a step's end) counts in the next; never more.
        assert!((sent(sa) - sent(sb)).abs() <= 1.0, "{sa} vs {sb}");
        assert!(metric(sb, "ttft_p50") > 0.0);
    }
    // Every arrival once (the last one, sent late past the ramp's end, may fall in no step).
    let total = |steps: &[serde_json::Value]| steps.iter().map(sent).sum::<f64>();
    assert!((total(a) - total(b)).abs() <= 1.0, "{a:?} vs {b:?}");
}
