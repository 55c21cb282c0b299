//! Adapters and cancellations as workloads, against the simulator over real HTTP on
//! 127.0.0.1: a round-robin mix sends its classes' models (LoRA adapters) in order,
//! request by request; `cancel` aborts its seeded share of the measured requests at the
//! planned time after send (the server sees each abort then, the rows say `cancelled`,
//! the failures and latency metrics leave them out, the verdict stands); an aborted
//! request's batch slot is free for the next run at once; and a simulator that leaks
//! aborted requests gets the run a `kv_leak` warning, an honest one none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cli_support::{perfplan, query, report_json};
use perfplan::plan::{CancelAfter, CancelSpec};
use perfplan::planner::cancel::CancelPlan;
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::Value;

fn write(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run_plan(plan: &Path, out: &Path) -> std::process::Output {
    perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

fn ok(o: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    stderr
}

fn metric(run: &Value, name: &str) -> f64 {
    run["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: {}", run["metrics"]))
}

fn sim(cfg: SimConfig) -> SimConfig {
    SimConfig {
        models: vec!["m".into()],
        ttft_base: HumanDuration(Duration::from_millis(20)),
        itl_base: HumanDuration(Duration::from_millis(5)),
        ..cfg
    }
}

/// The models a mix of three adapters sends, round robin: a, b, c, a, b, c, … in the
/// order the server received them (one request at a time), and the weighted draw of the
/// same classes does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_sends_the_adapters_in_order() {
    let server = SimServer::start(SimConfig {
        models: ["m", "lora-a", "lora-b", "lora-c"]
            .map(String::from)
            .to_vec(),
        ttft_base: HumanDuration(Duration::from_millis(1)),
        itl_base: HumanDuration(Duration::ZERO),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = |assign: &str, weights: bool| {
        let w = |x: &str| {
            if weights {
                format!(", weight = {x}")
            } else {
                String::new()
            }
        };
        format!(
            "[plan]\nname = \"rr\"\nseed = 3\n\
             [endpoints.s]\nbase_url = \"{url}\"\n\
             [trust]\naccept = [\"stream_not_observed\", \"client_bound\"]\n\
             [models.base]\nserved_name = \"m\"\n\
             [models.a]\nserved_name = \"lora-a\"\n[models.b]\nserved_name = \"lora-b\"\n\
             [models.c]\nserved_name = \"lora-c\"\n\
             [datasets.hi]\nkind = \"prompt\"\ntext = \"hi\"\n\
             [datasets.adapters]\nkind = \"mix\"\n{assign}\
             mix = [{{ dataset = \"hi\", name = \"a\", model = \"a\"{wa} }}, \
             {{ dataset = \"hi\", name = \"b\", model = \"b\"{wb} }}, \
             {{ dataset = \"hi\", name = \"c\", model = \"c\"{wc} }}]\n\
             [defaults]\noutput_tokens = 2\n\
             [matrix]\nmodel = \"base\"\ndataset = \"adapters\"\n\
             load = {{ concurrency = 1, requests = 10, warmup = 2 }}\n",
            url = server.base_url(),
            wa = w("1"),
            wb = w("1"),
            wc = w("1"),
        )
    };
    let models = |server: &SimServer| -> Vec<String> {
        server
            .received()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body["model"].as_str().unwrap().to_string())
            .collect()
    };
    let rr = write(dir.path(), &plan("assign = \"round_robin\"\n", false));
    ok(&tokio::task::block_in_place(|| {
        run_plan(&rr, &dir.path().join("rr"))
    }));
    let sent = models(&server);
    // The check's probe, if any, comes first: the run's 12 requests are the last ones.
    let run: Vec<&str> = sent[sent.len() - 12..].iter().map(String::as_str).collect();
    let cycle = ["lora-a", "lora-b", "lora-c"];
    let expected: Vec<&str> = (0..12).map(|i| cycle[i % 3]).collect();
    assert_eq!(run, expected, "{sent:?}");
    // Each class's planned share is a third.
    let db = dir.path().join("rr/results.db");
    let runs = report_json(&db);
    for class in ["a", "b", "c"] {
        let share = runs[0]["classes"][class]["planned_share"].as_f64().unwrap();
        assert!((share - 1.0 / 3.0).abs() < 1e-9, "{share}");
    }
    // The weighted draw of the same classes is no round robin (seed 3).
    let weighted = write(dir.path(), &plan("", true));
    let before = models(&server).len();
    ok(&tokio::task::block_in_place(|| {
        run_plan(&weighted, &dir.path().join("w"))
    }));
    let drawn: Vec<String> = models(&server)[before..].to_vec();
    let drawn: Vec<&str> = drawn[drawn.len() - 12..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_ne!(drawn, expected);
    server.shutdown().await;
}

#[test]
fn round_robin_keys_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |mix: &str| {
        write(
            dir.path(),
            &format!(
                "[plan]\nname = \"rr\"\n[endpoints.s]\nbase_url = \"sim://rr\"\n\
                 [models.m]\n[datasets.hi]\nkind = \"prompt\"\ntext = \"hi\"\n\
                 [datasets.x]\nkind = \"mix\"\n{mix}\n\
                 [matrix]\ndataset = \"x\"\nload = {{ concurrency = 1, requests = 2 }}\n"
            ),
        )
    };
    let validate = |p: &Path| {
        let o = perfplan(&["validate", p.to_str().unwrap()]);
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = validate(&plan(
        "assign = \"round_robin\"\nmix = [{ dataset = \"hi\", weight = 2 }]",
    ));
    assert!(e.contains("a `weight` has no effect"), "{e}");
    assert!(e.contains("plan.toml:"), "located: {e}");
    let e = validate(&plan("mix = [{ dataset = \"hi\" }]"));
    assert!(e.contains("needs a `weight`"), "{e}");
    let e = validate(&plan(
        "assign = \"round_robbin\"\nmix = [{ dataset = \"hi\" }]",
    ));
    assert!(e.contains("round_robin"), "{e}");
    let e = validate(&plan(
        "asign = \"round_robin\"\nmix = [{ dataset = \"hi\" }]",
    ));
    assert!(e.contains("did you mean `assign`"), "{e}");
}

/// A plan of one simulator at `url`, 64 tokens per request (~340 ms), then `rest`.
fn cancel_plan(url: &str, rest: &str) -> String {
    format!(
        "[plan]\nname = \"cancel\"\nseed = 7\n\
         [endpoints.s]\nbase_url = \"{url}\"\n\
         [models.m]\n\
         [datasets.hi]\nkind = \"prompt\"\ntext = \"Tell me a long story.\"\n\
         [defaults]\noutput_tokens = 64\nignore_eos = true\n{rest}"
    )
}

/// Half the measured requests, aborted 100 ms after send: exactly the requests the seeded
/// draw chose, each ending `cancelled` at 100 ms (the server letting go of it then too),
/// none a failure, none in a latency metric, the run valid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_requests_end_at_their_time_and_stay_apart() {
    let server = SimServer::start(sim(SimConfig::default())).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &cancel_plan(
            &server.base_url(),
            "[matrix]\nload = { concurrency = 4, requests = 24, warmup = 4, \
             cancel = { share = 0.5, after = \"100ms\", settle = \"2s\" } }\n",
        ),
    );
    let out = dir.path().join("out");
    ok(&tokio::task::block_in_place(|| run_plan(&plan, &out)));
    let db = out.join("results.db");
    // The requests the draw chose (items after the 4 warmup ones).
    let chosen = CancelPlan::of(
        &CancelSpec {
            share: 0.5,
            after: CancelAfter::Fixed(HumanDuration(Duration::from_millis(100))),
            settle: None,
        },
        7,
    );
    let expected: Vec<i64> = (4..28)
        .filter(|&i| chosen.after_for(i).is_some())
        .map(|i| i as i64)
        .collect();
    let rows = query::<String>(
        &db,
        "SELECT CAST(item AS TEXT), outcome, CAST(end_us - sent_us AS TEXT), error \
         FROM requests WHERE phase = 'measured' ORDER BY item",
    );
    let cancelled: Vec<i64> = rows
        .iter()
        .filter(|r| r[1].as_deref() == Some("cancelled"))
        .map(|r| r[0].as_deref().unwrap().parse().unwrap())
        .collect();
    assert_eq!(cancelled, expected);
    assert!(!expected.is_empty() && expected.len() < 24);
    for r in &rows {
        let took: i64 = r[2].as_deref().unwrap().parse().unwrap();
        match r[1].as_deref() {
            Some("cancelled") => {
                // Timed from the exchange's start: the send stamp is taken a connection
                // checkout later (tens of µs on the run's open connections).
                assert!((99_500..115_000).contains(&took), "aborted after {took} us");
                let error = r[3].as_deref().unwrap();
                assert!(error.contains("cancelled by the plan (`cancel`) 100ms after send"));
            }
            Some("ok") => assert!(took > 300_000, "a whole answer took {took} us"),
            other => panic!("{other:?}"),
        }
    }
    // The server saw each abort at ~100 ms: it let go of the response then.
    let truth = server.truth();
    let aborted: Vec<u64> = truth
        .iter()
        .filter(|t| !t.finished)
        .map(|t| t.ended_us - t.arrival_us)
        .collect();
    assert_eq!(aborted.len(), expected.len(), "{truth:?}");
    for us in &aborted {
        assert!(
            (98_000..130_000).contains(us),
            "the server let go after {us} us"
        );
    }
    let run = &report_json(&db)[0];
    let n = expected.len() as f64;
    assert_eq!(metric(run, "cancelled_requests"), n);
    assert_eq!(metric(run, "cancelled_ratio"), n / 24.0);
    assert_eq!(metric(run, "requests_ok"), 24.0 - n);
    assert_eq!(metric(run, "requests_failed"), 0.0);
    assert_eq!(metric(run, "success_ratio"), 1.0);
    assert!(metric(run, "latency_min") > 300.0, "{}", run["metrics"]);
    cli_support::assert_valid_but_for_the_machine(&run["verdict"]);
    assert_eq!(run["failed_requests"], 0);
    // An honest server gave everything back: no kv_leak.
    let warnings = run["warnings"].to_string();
    assert!(!warnings.contains("kv_leak"), "{warnings}");
    server.shutdown().await;
}

/// Every request of a first run aborted 60 ms in, on a simulator of 2 batch slots: the
/// next run at concurrency 2 finds both slots free at once (its TTFT is the simulator's
/// base, not a wait for the aborted requests' ~340 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_requests_free_their_slots_at_once() {
    let server = SimServer::start(sim(SimConfig {
        max_num_seqs: 2,
        ..SimConfig::default()
    }))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &cancel_plan(
            &server.base_url(),
            "[trust]\naccept = [\"client_bound\"]\n\
             [matrix]\nload = [\
             { concurrency = 2, requests = 6, warmup = 2, \
               cancel = { share = 1.0, after = \"60ms\", settle = \"1s\" } },\
             { concurrency = 2, requests = 4, warmup = 0 },\
             ]\n",
        ),
    );
    let out = dir.path().join("out");
    ok(&tokio::task::block_in_place(|| run_plan(&plan, &out)));
    let runs = report_json(&out.join("results.db"));
    assert_eq!(metric(&runs[0], "cancelled_requests"), 6.0);
    assert_eq!(runs[0]["status"], "done", "{}", runs[0]);
    assert_eq!(metric(&runs[1], "requests_ok"), 4.0);
    let ttft = metric(&runs[1], "ttft_max");
    assert!(
        ttft < 60.0,
        "the next run waited for a slot: ttft max {ttft} ms"
    );
    server.shutdown().await;
}

/// The same run on two simulators, one leaking aborted requests: the leaky one's run
/// gets `kv_leak` naming exactly the requests it still runs (those cancelled), the
/// honest one's none.
#[test]
fn a_leaking_server_gets_a_kv_leak_warning_and_an_honest_one_none() {
    let dir = tempfile::tempdir().unwrap();
    let sim = |name: &str, leak: bool| {
        format!(
            "[endpoints.{name}]\nbase_url = \"sim://{name}\"\n\
             [endpoints.{name}.sim]\nttft_base = \"20ms\"\nitl_base = \"5ms\"\n\
             block_size = 16\ncache_blocks = 1024\nfault_leak_aborted = {leak}\n"
        )
    };
    let text = format!(
        "[plan]\nname = \"leak\"\nseed = 5\n{}{}\
         [models.m]\n[datasets.hi]\nkind = \"prompt\"\ntext = \"Tell me a long story.\"\n\
         [defaults]\noutput_tokens = 64\nignore_eos = true\n\
         [matrix]\nendpoint = [\"honest\", \"leaky\"]\n\
         load = {{ concurrency = 4, requests = 20, warmup = 4, \
         cancel = {{ share = 0.3, after = \"80ms\", settle = \"500ms\" }} }}\n",
        sim("honest", false),
        sim("leaky", true)
    );
    let plan = write(dir.path(), &text);
    let out = dir.path().join("out");
    ok(&run_plan(&plan, &out));
    let runs = report_json(&out.join("results.db"));
    let warnings = |run: &Value| run["warnings"].to_string();
    let honest = runs
        .iter()
        .find(|r| r["axes"]["endpoint"] == "honest")
        .unwrap();
    let leaky = runs
        .iter()
        .find(|r| r["axes"]["endpoint"] == "leaky")
        .unwrap();
    assert!(
        !warnings(honest).contains("kv_leak"),
        "{}",
        warnings(honest)
    );
    cli_support::assert_valid_but_for_the_machine(&honest["verdict"]);
    let n = metric(leaky, "cancelled_requests");
    assert!(n > 0.0);
    let w = warnings(leaky);
    assert!(
        w.contains(&format!(
            "{n} requests running against 0 before the run (+{n})"
        )),
        "{w}"
    );
    assert!(w.contains("KV-cache usage"), "{w}");
    assert!(w.contains("still 500ms after the run"), "{w}");
    assert_eq!(
        leaky["verdict"]["status"], "suspect",
        "{}",
        leaky["verdict"]
    );
    let codes: Vec<&str> = leaky["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["kv_leak"]);
    // The gauges' facts are kept with each run: the honest one settled at once.
    let store = perfplan::store::Store::open(&out.join("results.db")).unwrap();
    for run in store.runs().unwrap() {
        let facts = run.facts.to_value();
        let s = &facts["cancel_settle"];
        let leaky = run.axes["endpoint"] == "leaky";
        assert_eq!(s["settled"], !leaky, "{s}");
        assert_eq!(s["before"]["running"], 0.0, "{s}");
        if leaky {
            assert_eq!(s["after"]["running"], n, "{s}");
            assert!(s["waited_ms"].as_u64().unwrap() >= 500, "{s}");
        } else {
            assert_eq!(s["after"]["running"], 0.0, "{s}");
        }
    }
}

#[test]
fn cancel_keys_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let check = |load: &str| {
        let p = write(
            dir.path(),
            &cancel_plan("sim://c", &format!("[matrix]\nload = {load}\n")),
        );
        let o = perfplan(&["validate", p.to_str().unwrap()]);
        assert!(!o.status.success(), "{load}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = check("{ concurrency = 1, requests = 2, cancel = { share = 2, after = \"1s\" } }");
    assert!(
        e.contains("out of range in `matrix.load.cancel.share`"),
        "{e}"
    );
    assert!(e.contains("plan.toml:"), "located: {e}");
    let e = check(
        "{ concurrency = 1, requests = 2, cancel = { share = 0.1, after = { min = \"2s\", max = \"1s\" } } }",
    );
    assert!(e.contains("`min` is above `max`"), "{e}");
    let e = check("{ concurrency = 1, requests = 2, cancl = { share = 0.1, after = \"1s\" } }");
    assert!(e.contains("did you mean `cancel`"), "{e}");
    let e = check(
        "{ concurrency = 1, requests = 2, cancel = { share = 0.1, after = \"1s\", setle = \"1s\" } }",
    );
    assert!(e.contains("setle"), "{e}");
}

/// Two shards of one run (`--shard K/2`, merged): the round robin and the cancelled
/// requests follow the run's request index, not the shard's, so the merged rows are
/// those of one process: every item's class is `item mod 3`, and the cancelled items are
/// exactly those the seeded draw chose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_keep_one_global_round_robin_and_one_cancel_draw() {
    let server = SimServer::start(sim(SimConfig::default())).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "[plan]\nname = \"shards\"\nseed = 13\n\
             [endpoints.s]\nbase_url = \"{url}\"\n\
             [models.m]\n[models.a]\nserved_name = \"m\"\n\
             [datasets.hi]\nkind = \"prompt\"\ntext = \"Tell me a long story.\"\n\
             [datasets.x]\nkind = \"mix\"\nassign = \"round_robin\"\n\
             mix = [{{ dataset = \"hi\", name = \"a\" }}, {{ dataset = \"hi\", name = \"b\" }}, \
             {{ dataset = \"hi\", name = \"c\", model = \"a\" }}]\n\
             [defaults]\noutput_tokens = 32\nignore_eos = true\n\
             [matrix]\nmodel = \"m\"\ndataset = \"x\"\nload = {{ concurrency = 4, requests = 20, warmup = 4, \
             cancel = {{ share = 0.4, after = \"60ms\", settle = \"1s\" }} }}\n",
            url = server.base_url()
        ),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let shards = dir.path().join("shards");
    let children: Vec<_> = (1..=2)
        .map(|k| {
            std::process::Command::new(env!("CARGO_BIN_EXE_perfplan"))
                .args(["run", plan.to_str().unwrap(), "--out"])
                .arg(&shards)
                .args(["--merge", "--shard", &format!("{k}/2")])
                .args(["--barrier", &format!("127.0.0.1:{port}")])
                .args(["--barrier-timeout", "60s"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    tokio::task::block_in_place(|| {
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    });
    let db = shards.join("merged/results.db");
    let rows = query::<i64>(&db, "SELECT item, class FROM requests ORDER BY item");
    assert_eq!(rows.len(), 24);
    for (k, r) in rows.iter().enumerate() {
        let (item, class) = (r[0].unwrap(), r[1].unwrap());
        assert_eq!(item, k as i64);
        assert_eq!(class, item % 3, "item {item}");
    }
    let chosen = CancelPlan::of(
        &CancelSpec {
            share: 0.4,
            after: CancelAfter::Fixed(HumanDuration(Duration::from_millis(60))),
            settle: None,
        },
        13,
    );
    let expected: Vec<i64> = (4..24)
        .filter(|&i| chosen.after_for(i).is_some())
        .map(|i| i as i64)
        .collect();
    let cancelled: Vec<i64> = query::<i64>(
        &db,
        "SELECT item FROM requests WHERE outcome = 'cancelled' ORDER BY item",
    )
    .iter()
    .map(|r| r[0].unwrap())
    .collect();
    assert_eq!(cancelled, expected);
    assert!(!expected.is_empty());
    server.shutdown().await;
}
