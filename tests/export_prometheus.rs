//! `perfplan report DB --format prometheus`: a suite run against the simulator over HTTP,
//! exported as Prometheus text exposition and read back by a Prometheus text parser:
//! every finite stored metric is one sample, named by the registry's unit rule, in base
//! units, labelled with the suite, the run, its verdict and its axes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn perfplan(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_exposition_parses_and_holds_every_metric_in_base_units() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        r#"
[plan]
name = "prom-export"
[endpoints.sim]
base_url = "sim://prom-export"
[endpoints.sim.sim]
ttft_base = "4ms"
itl_base = "1ms"
[models.m]
served_name = "sim-model"
[datasets.d]
kind = "prompt"
text = "a \"quoted\" prompt"
[defaults]
output_tokens = 8
[matrix]
load = [{ concurrency = 1, requests = 6, warmup = 1 }, { concurrency = 2, requests = 6, warmup = 2 }]
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let db = out.to_str().unwrap();
    let text = perfplan(&["report", db, "--format", "prometheus"]);
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("a valid exposition");

    let json: serde_json::Value =
        serde_json::from_str(&perfplan(&["report", db, "--format", "json"])).unwrap();
    let runs = json.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let finite: usize = runs
        .iter()
        .map(|r| {
            r["metrics"]
                .as_object()
                .unwrap()
                .values()
                .filter(|v| v.as_f64().is_some_and(f64::is_finite))
                .count()
        })
        .sum();
    assert_eq!(scrape.samples.len(), finite, "one sample per finite metric");

    for run in runs {
        let id = run["id"].as_str().unwrap();
        let ttft = scrape
            .samples
            .iter()
            .find(|s| s.metric == "perfplan_ttft_p99_seconds" && s.labels.get("run") == Some(id))
            .expect("ttft_p99 of each run");
        let stored = run["metrics"]["ttft_p99"].as_f64().unwrap();
        match ttft.value {
            prometheus_parse::Value::Gauge(v) => assert!((v - stored / 1000.0).abs() < 1e-12),
            ref other => panic!("{other:?}"),
        }
        assert_eq!(ttft.labels.get("suite"), Some("prom-export"));
        assert_eq!(
            ttft.labels.get("verdict"),
            run["verdict"]["status"].as_str()
        );
        let concurrency = run["axes"]["load"]["concurrency"].to_string();
        assert_eq!(
            ttft.labels.get("load_concurrency"),
            Some(concurrency.as_str()),
            "{:?}",
            ttft.labels
        );
        assert_eq!(ttft.labels.get("load_requests"), Some("6"));
        let tps = scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == "perfplan_output_tps_tokens_per_second"
                    && s.labels.get("run") == Some(id)
            })
            .expect("output_tps");
        assert!(matches!(tps.value, prometheus_parse::Value::Gauge(v) if v > 0.0));
    }
    // Every family has its HELP and TYPE.
    assert!(text.contains("# TYPE perfplan_ttft_p99_seconds gauge"));
    assert!(scrape.docs.contains_key("perfplan_ttft_p99_seconds"));
}
