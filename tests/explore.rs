//! The exploring load, through the CLI over real HTTP against the built-in simulator of
//! 8 batch slots: it grows 1, 2, 4, 8, 16 users, sees 16 gain nothing over 8, bisects
//! (12, 10), and names the saturation point at the slots (8, within [8, 16)) and the knee
//! near them; each level is a stored step, the metrics reach JSON, CSV and a gate; a bad
//! or misspelt key is a located error; the HTML's Pareto chart draws the steps (about
//! 3.5 s). By rate (an open loop), it names the simulator's capacity (8 slots over one
//! request's time, ~100 req/s) within 15%, by TTFT or, with TTFT off, by the server's
//! queue from telemetry (about 7 s each); a step of a count of requests ends each level
//! once that many ended in it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use cli_support::{perfplan, query, report_json, run};

use cli_support::EXPLORE_HEAD as HEAD;

fn metric(v: &serde_json::Value, name: &str) -> f64 {
    v["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name} is null: {}", v["metrics"]))
}

#[test]
fn finds_the_simulators_slots_and_stores_each_step() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let load = r#"load = { explore = { from = 1, max = 64, step = "500ms", probes = 2 } }"#;
    let gates = "[gates]\nsaturation_concurrency = \">= 8\"\n";
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n\n{gates}")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    let steps = r["steps"].as_array().unwrap();
    let levels: Vec<f64> = steps
        .iter()
        .map(|s| s["concurrency"].as_f64().unwrap())
        .collect();
    // Grown by 2 until a level gains too little, then bisected twice.
    assert_eq!(&levels[..4], &[1.0, 2.0, 4.0, 8.0], "{levels:?}");
    assert!(levels.len() <= 7, "{levels:?}");
    let sat = metric(r, "saturation_concurrency");
    assert!(
        (8.0..16.0).contains(&sat),
        "saturation at {sat}: {levels:?}"
    );
    let knee = metric(r, "knee_concurrency");
    assert!((4.0..=16.0).contains(&knee), "knee at {knee}: {levels:?}");
    // The named step's throughput is the stored step's; 8 users make ~8× one user's.
    let at = |c: f64| steps.iter().find(|s| s["concurrency"] == c).unwrap();
    assert_eq!(
        metric(r, "saturation_output_tps"),
        metric(at(sat), "output_tps")
    );
    assert_eq!(metric(r, "knee_output_tps"), metric(at(knee), "output_tps"));
    let gain = metric(at(8.0), "output_tps") / metric(at(1.0), "output_tps");
    assert!((5.0..11.0).contains(&gain), "8 users / 1 user = {gain}");
    // Counts agree: the steps' requests are the run's.
    let in_steps: f64 = steps.iter().map(|s| metric(s, "requests_ok")).sum();
    assert_eq!(in_steps, metric(r, "requests_ok"));
    // CSV carries the columns.
    let o = perfplan(&["report", db.to_str().unwrap(), "--format", "csv"]);
    let csv = String::from_utf8_lossy(&o.stdout);
    let head = csv.lines().next().unwrap();
    assert!(head.contains("knee_concurrency") && head.contains("saturation_output_tps"));
    // The table leads with the knee and the saturation point.
    let o = perfplan(&["report", db.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout);
    let header = table
        .lines()
        .find(|l| l.contains("knee_concurrency"))
        .unwrap();
    assert!(
        header.trim_start().starts_with("knee_concurrency"),
        "{table}"
    );
    // A gate on the saturation point fails when it asks for more.
    let o = perfplan(&[
        "report",
        db.to_str().unwrap(),
        "--gate",
        "saturation_concurrency >= 32",
    ]);
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // The HTML draws the Pareto front: each step a point labelled by its level, the front
    // joined (no hardware here: plain output tok/s on the y axis).
    let page = html_page(&db, &dir.path().join("r.html"));
    assert!(page.contains("output tok/s (no hardware given)"));
    assert!(page.contains("<title>sim · front</title>"));
    let figure = &page[page.find("Pareto front: speed").unwrap()..];
    let figure = &figure[..figure.find("</figure>").unwrap()];
    assert!(figure.contains(">c=8</text>"), "{figure}");
}

#[test]
fn expand_shows_an_exploring_load_and_rejects_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let good = r#"load = { explore = { from = 1, max = 256, step = "30s" } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{good}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("explore c=1..256 x2 step 30s"), "{text}");

    let bad = r#"load = { explore = { from = 64, max = 8 }, concurrency = 4, warmup = 2 }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{bad}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    for said in [
        "needs `step`",
        "drop `concurrency`",
        "no warmup",
        "above its `max`",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }

    let typo = r#"load = { explore = { form = 1, step = "1s" } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{typo}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did you mean `from`?"), "{err}");
    let by = r#"load = { explore = { by = "rat", step = "1s" } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{by}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`concurrency`") && err.contains("`rate`"),
        "{err}"
    );
    assert!(err.contains("plan.toml:"), "located: {err}");

    // By rate, and a step of a count of requests: the label says both.
    let good = r#"load = { explore = { by = "rate", from = 5, max = 400, step = 200 } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{good}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("explore rate=5..400/s x2 step 200 requests"),
        "{text}"
    );
    for (bad, said) in [
        ("step = 0", "must be from 1"),
        ("step = -3", "must be from 1"),
        ("step = \"30x\"", "invalid duration `30x`"),
        ("step = 2.5", "expected an integer or a string"),
        (
            "by = \"rate\", step = \"1s\", max_in_flight = 4",
            "did you mean",
        ),
    ] {
        let load = format!("load = {{ explore = {{ {bad} }} }}");
        std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
        let o = perfplan(&["expand", plan.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{bad}");
        assert!(err.contains(said), "{bad}: {err}");
        assert!(err.contains("plan.toml:"), "{bad} located: {err}");
    }
    queue_signal_needs_readings(&plan);
}

/// `server_queue = true` on an endpoint whose telemetry cannot give a level five readings
/// (scraped every 1 s by default, a 1 s step; or turned off) is refused where it is set.
fn queue_signal_needs_readings(plan: &std::path::Path) {
    let load = r#"load = { explore = { by = "rate", step = "1s", server_queue = true } }"#;
    for (telemetry, said) in [
        ("", "at least 5 readings"),
        ("telemetry = { enabled = false }\n", "turns off"),
        ("telemetry = { interval = \"100ms\" }\n", ""),
    ] {
        let head = HEAD.replace(
            "base_url = \"sim://explore\"\n",
            &format!("base_url = \"sim://explore\"\n{telemetry}"),
        );
        let text = format!("{head}\n[matrix]\n{load}\n");
        cli_support::expands(plan, &text, said, telemetry);
    }
}

/// The simulator's analytic capacity in req/s: its 8 batch slots over one request's time
/// alone (read from the run's first level, where nothing waits).
fn capacity(first_step: &serde_json::Value) -> f64 {
    8.0 / (metric(first_step, "latency_p50") / 1e3)
}

/// Runs `load` against `head`'s simulator: the folder, the database and the report's runs.
fn explored(
    head: &str,
    load: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Vec<serde_json::Value>,
) {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, format!("{head}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    (dir, db, runs)
}

/// The rates of an exploring run's stored steps, in order.
fn rates(steps: &[serde_json::Value]) -> Vec<f64> {
    steps.iter().map(|s| s["rate"].as_f64().unwrap()).collect()
}

#[test]
fn by_rate_finds_the_simulators_capacity() {
    let load = r#"load = { explore = { by = "rate", from = 20, max = 1000, step = "800ms", probes = 3 } }"#;
    // Two accelerators at 3.6 an hour (a thousandth a second): the steps' capacity figures.
    let head = HEAD.replace(
        "base_url = \"sim://explore\"\n",
        "base_url = \"sim://explore\"\nhardware = { accelerators = 2, cost_per_hour = 3.6 }\n",
    );
    let (dir, db, runs) = explored(&head, load);
    let r = &runs[0];
    let steps = r["steps"].as_array().unwrap();
    let levels = rates(steps);
    assert_eq!(&levels[..3], &[20.0, 40.0, 80.0], "{levels:?}");
    let cap = capacity(&steps[0]);
    assert!((80.0..125.0).contains(&cap), "capacity {cap}");
    // Below the capacity each level's arrivals are served: its requests/s is its rate.
    let rps = metric(&steps[1], "rps");
    assert!((rps / 40.0 - 1.0).abs() < 0.25, "40/s served {rps}/s");
    // Past the capacity the queue grows: the walk saturates (160/s), drains the queue
    // before each lower probe, bisects (120, 100, then 90 or 110), and the saturation
    // point (the highest rate that still gained) lies within 15% of the capacity (100/s
    // over seeds 5, 6 and 7; 80/s, 20% short, were the probes judged on 160/s's queue).
    let sat = metric(r, "saturation_rps");
    assert!(
        (sat / cap - 1.0).abs() <= 0.15,
        "saturation at {sat}/s, capacity {cap}/s: {levels:?}"
    );
    assert!(levels.iter().any(|&l| l > cap), "{levels:?}");
    assert!(r["metrics"]["saturation_concurrency"].is_null());
    assert!(r["metrics"]["knee_concurrency"].is_null());
    let knee = metric(r, "knee_rps");
    assert!(levels.contains(&knee), "knee {knee}: {levels:?}");
    let at = |c: f64| steps.iter().find(|s| s["rate"] == c).unwrap();
    assert_eq!(
        metric(r, "saturation_output_tps"),
        metric(at(sat), "output_tps")
    );
    // The table leads with the rate's knee and saturation, not the concurrency's.
    let o = perfplan(&["report", db.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout);
    let header = table.lines().find(|l| l.contains("knee_rps")).unwrap();
    assert!(header.trim_start().starts_with("knee_rps"), "{table}");
    assert!(!header.contains("knee_concurrency"), "{table}");
    rate_steps_carry_capacity(steps, &db, dir.path());
}

/// Each step of an exploring run by rate has the run's capacity figures by its rule:
/// its users are its mean in flight by Little's law, which below the capacity is its rate
/// × one request's time; the HTML's Pareto front draws the steps, labelled by rate.
fn rate_steps_carry_capacity(
    steps: &[serde_json::Value],
    db: &std::path::Path,
    dir: &std::path::Path,
) {
    for s in steps {
        let tps = metric(s, "output_tps");
        let users = metric(s, "in_flight_mean");
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
        assert!(close(metric(s, "output_tps_per_user"), tps / users), "{s}");
        assert!(
            close(metric(s, "output_tps_per_accelerator"), tps / 2.0),
            "{s}"
        );
        assert!(
            close(metric(s, "cost_per_million_output_tokens"), 1000.0 / tps),
            "{s}"
        );
        assert!(
            metric(s, "cost_per_million_total_tokens") < 1000.0 / tps,
            "{s}"
        );
    }
    let at_40 = &steps[1];
    let little = 40.0 * metric(at_40, "latency_p50") / 1e3;
    let users = metric(at_40, "in_flight_mean");
    assert!(
        (users / little - 1.0).abs() < 0.25,
        "{users} in flight at 40/s, not {little}"
    );
    let o = perfplan(&["report", db.to_str().unwrap(), "--format", "md"]);
    let md = String::from_utf8_lossy(&o.stdout);
    let head = md
        .lines()
        .find(|l| l.starts_with("| run | step |"))
        .unwrap();
    assert!(head.contains("output_tps_per_user") && head.contains("cost_per_million_total_tokens"));
    let page = html_page(db, &dir.join("r.html"));
    let figure = &page[page.find("Pareto front: speed").unwrap()..];
    let figure = &figure[..figure.find("</figure>").unwrap()];
    assert!(figure.contains(">40 rps</text>"), "{figure}");
    assert!(
        figure.contains("Little&#39;s law") || figure.contains("Little's law"),
        "{figure}"
    );
    assert!(figure.contains("output tok/s per accelerator"), "{figure}");
}

#[test]
fn a_step_of_a_count_of_requests() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let load = r#"load = { explore = { from = 4, max = 64, step = 48, probes = 1 } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{load}\n")).unwrap();
    let db = run(&plan, &dir.path().join("out"));
    let runs = report_json(&db);
    let r = &runs[0];
    let steps = r["steps"].as_array().unwrap();
    let levels: Vec<f64> = steps
        .iter()
        .map(|s| s["concurrency"].as_f64().unwrap())
        .collect();
    assert_eq!(&levels[..3], &[4.0, 8.0, 16.0], "{levels:?}");
    let sat = metric(r, "saturation_concurrency");
    assert!(
        (8.0..16.0).contains(&sat),
        "saturation at {sat}: {levels:?}"
    );
    // Each level ended once 48 requests ended in it (a stored step's rps counts those
    // that ended in it), whatever its length: 16 users take about half the time of 4.
    let span =
        |s: &serde_json::Value| s["end_s"].as_f64().unwrap() - s["start_s"].as_f64().unwrap();
    for s in steps {
        let n = metric(s, "rps") * span(s);
        assert!(
            (n - 48.0).abs() < 0.01,
            "{n} requests ended in a step: {steps:?}"
        );
    }
    let (slow, fast) = (span(&steps[0]), span(&steps[2]));
    assert!(fast < 0.75 * slow, "4 users {slow}s, 16 users {fast}s");
}

#[test]
fn the_servers_queue_saturates_a_level() {
    // The TTFT test off (a factor of 1000): throughput alone would pass 160/s (it
    // serves more than 80/s did); the server's queue, scraped every 100 ms, grows
    // through every level past the capacity.
    let head = HEAD.replace(
        "base_url = \"sim://explore\"\n",
        "base_url = \"sim://explore\"\ntelemetry = { interval = \"100ms\" }\n",
    );
    let load = r#"load = { explore = { by = "rate", from = 20, max = 1000, step = "800ms", probes = 3, ttft_factor = 1000, server_queue = true } }"#;
    let (_dir, db, runs) = explored(&head, load);
    let r = &runs[0];
    let steps = r["steps"].as_array().unwrap();
    let levels = rates(steps);
    let cap = capacity(&steps[0]);
    let sat = metric(r, "saturation_rps");
    assert!(
        (sat / cap - 1.0).abs() <= 0.15,
        "saturation at {sat}/s, capacity {cap}/s: {levels:?}"
    );
    assert!(metric(r, "queue_depth_max") > 0.0);
    // The stored ending names the queue.
    let extras: Vec<Vec<Option<String>>> = query(&db, "SELECT extras_json FROM runs");
    let extras: serde_json::Value = serde_json::from_str(extras[0][0].as_deref().unwrap()).unwrap();
    assert_eq!(
        extras["time"]["explore"]["reason"], "the server's queue kept growing",
        "{levels:?}"
    );
}

/// The suite's HTML report, written to `out` and read back.
fn html_page(db: &std::path::Path, out: &std::path::Path) -> String {
    let o = perfplan(&[
        "report",
        db.to_str().unwrap(),
        "--format",
        "html",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}
