//! The exploring load, through the CLI over real HTTP against the built-in simulator of
//! 8 batch slots: it grows 1, 2, 4, 8, 16 users, sees 16 gain nothing over 8, bisects
//! (12, 10), and names the saturation point at the slots (8, within [8, 16)) and the knee
//! near them; each level is a stored step, the metrics reach JSON, CSV and a gate; a bad
//! or misspelt key is a located error; the HTML's Pareto chart draws the steps. The run
//! lasts about 3.5 s.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use cli_support::{perfplan, report_json, run};

/// 8 slots, 20 ms to the first token, 4 ms a token, 16 tokens: a request takes ~80 ms;
/// past 8 in flight, requests wait for a slot and throughput stays flat.
const HEAD: &str = r#"
[plan]
name = "explore"
seed = 5

[endpoints.sim]
base_url = "sim://explore"

[endpoints.sim.sim]
ttft_base = "20ms"
itl_base = "4ms"
max_num_seqs = 8

[models.m]

[datasets.p]
kind = "prompt"
text = "hi"

[defaults]
output_tokens = 16
ignore_eos = true
"#;

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
    let html = dir.path().join("r.html");
    let o = perfplan(&[
        "report",
        db.to_str().unwrap(),
        "--format",
        "html",
        "--out",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
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
    let by = r#"load = { explore = { by = "rate", step = "1s" } }"#;
    std::fs::write(&plan, format!("{HEAD}\n[matrix]\n{by}\n")).unwrap();
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`concurrency`"), "{err}");
}
