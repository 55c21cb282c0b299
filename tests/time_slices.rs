//! Time, through the CLI against the in-process simulator: a run's steady-state metrics
//! agree with the run's own (the simulator serves every request alike, so the steady
//! window's TTFT is the run's within a margin), `perfplan report --slices` tiles the run
//! and its counts add up to the stored ones, and with stderr piped a progress line comes
//! every `--progress-every` (from a timer, so a run gets its lines while it waits).

mod cli_support;

use cli_support::{perfplan, report_json};

/// A closed loop of 4 for 2.5 s, requests of ~60 ms (TTFT 20 ms, 10 tokens 4 ms apart),
/// slices of 250 ms.
const PLAN: &str = r#"
[plan]
name = "time"
seed = 3

[endpoints.sim]
base_url = "sim://time"

[endpoints.sim.sim]
ttft_base = "20ms"
itl_base = "4ms"

[models.m]

[datasets.p]
kind = "prompt"
text = "hi"

[defaults]
output_tokens = 10
ignore_eos = true

[report]
slice = "250ms"

[matrix]
load = [{ concurrency = 4, duration = "2500ms", warmup = 4 }]
"#;

fn metric(run: &serde_json::Value, name: &str) -> f64 {
    run["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name} is null: {run}"))
}

#[test]
fn steady_metrics_slices_and_progress_lines_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--progress-every",
        "1s",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");

    // Progress lines, timer-driven: 2 s and more of load make at least two.
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("progress "))
        .collect();
    assert!(lines.len() >= 2, "{stderr}");
    assert!(
        lines[0].contains(" done (") && lines[0].contains("req/s over the last 1.0 s"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("TTFT p50 ~"), "{}", lines[1]);
    let log = std::fs::read_to_string(out.join("perfplan.log")).unwrap();
    assert!(log.contains(lines[0]), "the log holds the lines too");

    // Steady metrics: present, and within margin of the run's.
    let runs = report_json(&out);
    let run = &runs[0];
    let steady_s = metric(run, "steady_s");
    let duration = metric(run, "duration_s");
    assert!(
        steady_s > 1.5 && steady_s < duration,
        "{steady_s} of {duration}"
    );
    for (steady, whole, margin) in [
        ("ttft_p50_steady", "ttft_p50", 0.25),
        ("latency_p50_steady", "latency_p50", 0.25),
        ("tpot_p50_steady", "tpot_p50", 0.25),
        ("rps_steady", "rps", 0.25),
        ("output_tps_steady", "output_tps", 0.25),
    ] {
        let (a, b) = (metric(run, steady), metric(run, whole));
        assert!((a - b).abs() <= margin * b, "{steady} {a} vs {whole} {b}");
    }
    let decode = metric(run, "decode_tps_p50");
    let tpot = metric(run, "tpot_p50");
    assert!(
        (decode - 1000.0 / tpot).abs() <= 0.05 * decode,
        "{decode} vs 1000/{tpot}"
    );
    assert!(metric(run, "request_output_tps_p50") > 0.0);

    // The slices tile the run and count every measured request once.
    let o = perfplan(&["report", out.to_str().unwrap(), "--slices"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = String::from_utf8(o.stdout).unwrap();
    let mut rows = csv.lines();
    assert!(rows
        .next()
        .unwrap()
        .starts_with("run,start_s,len_s,ok,failed,rps"));
    let rows: Vec<Vec<&str>> = rows.map(|l| l.split(',').collect()).collect();
    let span: f64 = rows.iter().map(|r| r[2].parse::<f64>().unwrap()).sum();
    assert!((span - duration).abs() < 1e-6, "{span} vs {duration}");
    let ok: f64 = rows.iter().map(|r| r[3].parse::<f64>().unwrap()).sum();
    assert_eq!(ok, metric(run, "requests_ok"));
    assert!(rows.len() >= 10, "250 ms slices of a 2.5 s run");
    assert!(
        rows.iter().any(|r| r[12] == "true"),
        "some slices are steady"
    );
    // In flight: the closed loop keeps its 4 slots busy in a steady slice.
    let steady: Vec<&Vec<&str>> = rows.iter().filter(|r| r[12] == "true").collect();
    for r in &steady {
        let in_flight: f64 = r[7].parse().unwrap();
        assert!((in_flight - 4.0).abs() < 0.5, "{r:?}");
    }
    let o = perfplan(&[
        "report",
        out.to_str().unwrap(),
        "--slices",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--slices writes CSV"));
}
