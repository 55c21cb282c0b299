//! The answer's times from the kernel's receive stamps (issue 35): a run of the lean
//! client over TCP is timed by them, and says so (`kernel_clock_ratio` 1, `client_delay`
//! of every request kept); with the stamps turned off (`PERFPLAN_RECEIVE_STAMPS=off`)
//! the client's reads time it, and the report says that too (ratio 0, no delay).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const PLAN: &str = r#"
[plan]
name = "kernel-clock"
seed = 3

[endpoints.sim]
base_url = "sim://clock"

[endpoints.sim.sim]
ttft_base = "5ms"
itl_base = "2ms"

[models.m]
served_name = "m"

[datasets.hello]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 4
ignore_eos = true

[matrix]
load = { concurrency = 4, requests = 40, warmup = 4 }
"#;

/// A measured row's `(read_clock, first_read_delay_us)`.
type Clocked = (Option<i64>, Option<i64>);

/// Runs the plan with `stamps` ("on" or "off") and returns the run's report entry and its
/// measured rows' clocks.
fn run(dir: &Path, stamps: &str) -> (Value, Vec<Clocked>) {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = dir.join(format!("out-{stamps}"));
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("PERFPLAN_RECEIVE_STAMPS", stamps)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let db = out.join("results.db");
    let rows = cli_support::query::<i64>(
        &db,
        "SELECT read_clock, first_read_delay_us FROM requests WHERE phase = 'measured'",
    )
    .into_iter()
    .map(|r| (r[0], r[1]))
    .collect();
    (cli_support::report_json(&db).remove(0), rows)
}

fn metric(run: &Value, name: &str) -> Option<f64> {
    run["metrics"][name].as_f64()
}

#[test]
fn a_run_is_timed_by_the_kernel_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (run, rows) = run(dir.path(), "on");
    assert_eq!(rows.len(), 40);
    let ratio = metric(&run, "kernel_clock_ratio").unwrap();
    if ratio == 0.0 {
        eprintln!("skipped: this kernel gives no receive stamps (SO_TIMESTAMPNS)");
        return;
    }
    // The kernel turns stamping on a moment after the first socket asks: the warmup's
    // requests take that moment; the measured ones are all stamped.
    assert_eq!(ratio, 1.0, "{rows:?}");
    assert!(
        rows.iter().all(|r| r.0 == Some(1) && r.1.is_some()),
        "{rows:?}"
    );
    let p50 = metric(&run, "client_delay_p50").unwrap();
    let max = metric(&run, "client_delay_max").unwrap();
    assert!((0.0..=max).contains(&p50), "{p50} {max}");
}

#[test]
fn without_stamps_the_reads_time_the_run_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (run, rows) = run(dir.path(), "off");
    assert_eq!(metric(&run, "kernel_clock_ratio"), Some(0.0));
    assert_eq!(metric(&run, "client_delay_p50"), None);
    assert!(rows.iter().all(|r| r.0 == Some(0)), "{rows:?}");
    // The simulator's TTFT is 5 ms give or take its jitter.
    assert!(metric(&run, "ttft_p50").unwrap() > 2.0);
}

/// `report --clock user`: every answer time moved to when the client read it, from the
/// delays the rows keep. The rows of a run timed by its reads are given known delays
/// (3 ms on each first content chunk, none on the others), so TTFT on the user clock is
/// the kernel's + 3 ms exactly, and the gaps after the first chunk do not move.
#[test]
fn the_user_clock_moves_the_answers_by_the_stored_delays_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (_, rows) = run(dir.path(), "off");
    assert_eq!(rows.len(), 40);
    let db = dir.path().join("out-off/results.db");
    // The run as stored, each answer timed by its reads: the same on either clock.
    let unmoved = dir.path().join("unmoved.db");
    std::fs::copy(&db, &unmoved).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    // `chunk_read_delays`: tag 1, then 3000 µs (0xB8 0x17) and three zeros.
    conn.execute_batch(
        "UPDATE requests SET read_clock = 1, first_read_delay_us = 3000, \
         end_read_delay_us = 0, chunk_read_delays = X'01B817000000' \
         WHERE phase = 'measured';",
    )
    .unwrap();
    drop(conn);
    let kernel = cli_support::report_json(&db).remove(0);
    let o = cli_support::perfplan(&[
        "report",
        db.to_str().unwrap(),
        "--format",
        "json",
        "--clock",
        "user",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let user: Value = serde_json::from_slice(&o.stdout).unwrap();
    let user = &user[0];
    assert_eq!(
        (kernel["clock"].as_str(), user["clock"].as_str()),
        (Some("kernel"), Some("user"))
    );
    for name in ["ttft_mean", "ttft_p50", "ttft_p99"] {
        let (k, u) = (metric(&kernel, name).unwrap(), metric(user, name).unwrap());
        assert!((u - k - 3.0).abs() < 1e-6, "{name}: kernel {k}, user {u}");
    }
    assert_eq!(metric(user, "latency_p50"), metric(&kernel, "latency_p50"));
    assert_eq!(metric(user, "requests_ok"), metric(&kernel, "requests_ok"));
    // The table says which clock it shows.
    let table = cli_support::stdout_of(&["report", db.to_str().unwrap(), "--clock", "user"]);
    assert!(
        table.contains("answer times: when the client read them"),
        "{table}"
    );
    let db = db.to_str().unwrap();
    let html = cli_support::stdout_of(&[
        "report", db, "--clock", "user", "--format", "html", "--out", "-",
    ]);
    assert!(
        html.contains("when the client read them") && html.contains("So are the plots"),
        "the page says its clock, its plots' too"
    );
    let md = cli_support::stdout_of(&["report", db, "--clock", "user", "--format", "md"]);
    assert!(
        md.contains("*answer times: when the client read them"),
        "{md}"
    );
    let csv = cli_support::stdout_of(&["report", db, "--clock", "user", "--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].ends_with(",clock") && lines[1].ends_with(",user"),
        "{csv}"
    );
    let csv = cli_support::stdout_of(&["report", db, "--format", "csv"]);
    assert!(!csv.lines().next().unwrap().ends_with(",clock"), "{csv}");
    // An export is on the report's clock too.
    let exported = |clock: &str| -> f64 {
        let file = dir.path().join(format!("{clock}.prom"));
        let target = format!("prometheus={}", file.display());
        let o = cli_support::perfplan(&["report", db, "--clock", clock, "--export", &target]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&file).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("perfplan_ttft_p50_seconds{"))
            .unwrap_or_else(|| panic!("{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (k, u) = (exported("kernel"), exported("user"));
    assert!(
        (u - k - 0.003).abs() < 1e-9,
        "exported ttft_p50: kernel {k}, user {u}"
    );
    // Time slices: every slice's TTFT p50 moves by the 3 ms too.
    let slices = |clock: &str| -> Vec<f64> {
        let csv = cli_support::stdout_of(&["report", db, "--slices", "--clock", clock]);
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let at = header.iter().position(|h| *h == "ttft_p50_ms").unwrap();
        lines
            .filter_map(|l| l.split(',').nth(at)?.parse().ok())
            .collect()
    };
    let (k, u) = (slices("kernel"), slices("user"));
    assert!(!k.is_empty() && k.len() == u.len(), "{k:?} {u:?}");
    for (k, u) in k.iter().zip(&u) {
        assert!(
            (u - k - 3.0).abs() < 1e-3,
            "slice ttft_p50: kernel {k}, user {u}"
        );
    }
    the_gates_and_compare_judge_on_the_chosen_clock(
        db,
        &metric(&kernel, "ttft_p50").unwrap(),
        &unmoved,
    );
}

/// A gate between the kernel's TTFT p50 and the user clock's (3 ms later) passes on the
/// kernel clock and fails on the user clock, as the report shows it; `compare --clock user`
/// puts both suites on the user clock (the delta is the 3 ms the new one's reads lagged).
fn the_gates_and_compare_judge_on_the_chosen_clock(db: &str, ttft_p50: &f64, unmoved: &Path) {
    let gate = format!("ttft_p50=<={}ms", ttft_p50 + 1.5);
    let gated = |clock: &str| {
        cli_support::perfplan(&["report", db, "--gate", &gate, "--clock", clock])
            .status
            .code()
    };
    assert_eq!((gated("kernel"), gated("user")), (Some(0), Some(1)));
    let base = unmoved.to_str().unwrap();
    // `compare` and `history` of the two as JSON on `clock`, which they say.
    let json_on = |command: &str, clock: &str| -> Value {
        let args = [
            command,
            base,
            db,
            "--metrics",
            "ttft_p50",
            "--format",
            "json",
        ];
        let o = cli_support::perfplan(&[&args[..], &["--clock", clock]].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["clock"].as_str(), Some(clock), "{v}");
        v
    };
    let delta = |clock: &str| {
        json_on("compare", clock)["pairs"][0]["metrics"]["ttft_p50"]["delta"]
            .as_f64()
            .unwrap()
    };
    assert!(delta("kernel").abs() < 1e-6);
    assert!((delta("user") - 3.0).abs() < 1e-6);
    // `history` puts every release on one clock too.
    let step = |clock: &str| {
        let v = json_on("history", clock);
        let points = &v["lines"][0]["points"];
        points[1]["value"].as_f64().unwrap() - points[0]["value"].as_f64().unwrap()
    };
    assert!(step("kernel").abs() < 1e-6);
    assert!((step("user") - 3.0).abs() < 1e-6);
}

/// A mix's per-class metrics move with the run's: each class's TTFT on the user clock is
/// its kernel TTFT + the 3 ms its rows' first reads are given.
#[test]
fn a_mix_s_class_metrics_move_to_the_user_clock_too() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN.replace(
        "[defaults]",
        "[datasets.both]\nkind = \"mix\"\nmix = [\n  { dataset = \"hello\", name = \"a\", weight = 0.5 },\n  \
         { dataset = \"hello\", name = \"b\", weight = 0.5 },\n]\n\n[defaults]",
    );
    let plan = plan.replace("[matrix]\n", "[matrix]\ndataset = \"both\"\n");
    // Two simulated replicas, for `--by-replica`.
    let plan = plan.replace("itl_base = \"2ms\"\n", "itl_base = \"2ms\"\nreplicas = 2\n");
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["run", "plan.toml", "--out", out.to_str().unwrap()])
        .current_dir(dir.path())
        .env("PERFPLAN_RECEIVE_STAMPS", "off")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let db = out.join("results.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "UPDATE requests SET read_clock = 1, first_read_delay_us = 3000, \
             end_read_delay_us = 0, chunk_read_delays = X'01B817000000' \
             WHERE phase = 'measured';",
        )
        .unwrap();
    let kernel = cli_support::report_json(&db).remove(0);
    let db = db.to_str().unwrap();
    let user: Value = serde_json::from_str(&cli_support::stdout_of(&[
        "report", db, "--format", "json", "--clock", "user",
    ]))
    .unwrap();
    let by_class = |clock: &str| {
        let csv = cli_support::stdout_of(&[
            "report",
            db,
            "--by-class",
            "--metrics",
            "ttft_p50",
            "--clock",
            clock,
        ]);
        let row = csv.lines().nth(1).unwrap().to_string();
        row.rsplit(',').next().unwrap().parse::<f64>().unwrap()
    };
    let (k, u) = (by_class("kernel"), by_class("user"));
    assert!(
        (u - k - 3.0).abs() < 1e-6,
        "--by-class: kernel {k}, user {u}"
    );
    let by_replica = |clock: &str| -> Vec<f64> {
        let csv = cli_support::stdout_of(&[
            "report",
            db,
            "--by-replica",
            "--metrics",
            "ttft_p50",
            "--clock",
            clock,
        ]);
        let rows: Vec<f64> = csv
            .lines()
            .skip(1)
            .map(|row| row.rsplit(',').next().unwrap().parse::<f64>().unwrap())
            .collect();
        assert_eq!(rows.len(), 2, "{csv}");
        rows
    };
    for (k, u) in by_replica("kernel").iter().zip(by_replica("user")) {
        assert!(
            (u - k - 3.0).abs() < 1e-6,
            "--by-replica: kernel {k}, user {u}"
        );
    }
    for (class, name) in [("a", "ttft_p50"), ("b", "ttft_p50"), ("a", "ttft_mean")] {
        let of = |run: &Value| run["classes"][class]["metrics"][name].as_f64().unwrap();
        let (k, u) = (of(&kernel), of(&user[0]));
        assert!(
            (u - k - 3.0).abs() < 1e-6,
            "{name}@{class}: kernel {k}, user {u}"
        );
    }
}
