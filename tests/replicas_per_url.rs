//! What runs per URL of an endpoint's `urls`. `perfplan check` probes every replica, not
//! only the first: replicas that agree with the first are one row each; one that answers
//! differently shows which checks differ (three simulators on ephemeral ports: a healthy
//! one, one that leaves `cached_tokens` out of streamed usage, one that serves another
//! model). `perfplan run` waits after a launch until every replica is ready.

use std::process::Command;

use perfplan::sim::{SimConfig, SimServer};

fn line<'a>(text: &'a str, check: &str) -> Option<&'a str> {
    text.lines().find(|l| l.contains(check))
}

fn verdict(text: &str, check: &str) -> &'static str {
    let l = line(text, check).unwrap_or_else(|| panic!("no `{check}` row: {text}"));
    ["pass", "warn", "fail"]
        .into_iter()
        .find(|v| l.contains(&format!(" {v} ")))
        .unwrap_or("?")
}

#[test]
fn check_runs_the_api_probes_against_every_replica() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let start = |cfg: SimConfig| rt.block_on(SimServer::start(cfg)).unwrap();
    let healthy = start(SimConfig::default());
    let no_cached = start(SimConfig {
        omit_cached_tokens: true,
        ..SimConfig::default()
    });
    let other_model = start(SimConfig {
        models: vec!["other".into()],
        ..SimConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    let plan = format!(
        r#"
[plan]
name = "check-replicas"
[endpoints.e]
urls = ["{}", "{}", "{}"]
[models.m]
served_name = "sim-model"
[datasets.d]
kind = "prompt"
text = "hello replicas"
[defaults]
output_tokens = 2
stream = true
[matrix]
load = {{ concurrency = 1, requests = 2 }}
"#,
        healthy.base_url(),
        no_cached.base_url(),
        other_model.base_url()
    );
    std::fs::write(&path, plan).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["check", path.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    // The first replica's own rows pass; the second agrees but for cached_tokens.
    assert_eq!(verdict(&text, "┆ cached_tokens "), "pass", "{text}");
    assert_eq!(verdict(&text, "replica 1 model listed"), "pass", "{text}");
    assert_eq!(verdict(&text, "replica 1 cached_tokens"), "warn", "{text}");
    let summary = line(&text, "replica 1 probes").unwrap();
    assert!(summary.contains(&no_cached.base_url()), "{summary}");
    // The third does not serve the model: its request fails, and so does the check.
    assert_eq!(verdict(&text, "replica 2 model listed"), "warn", "{text}");
    assert_eq!(verdict(&text, "replica 2 request"), "fail", "{text}");
    assert_eq!(o.status.code(), Some(3), "{text}");
    // Every replica was sent the probe's chat request.
    for s in [&healthy, &no_cached, &other_model] {
        let posts = s.received().iter().filter(|r| r.method == "POST").count();
        assert!(posts >= 1, "{}", s.base_url());
    }
}

#[test]
fn a_launch_waits_for_every_replica_to_be_ready() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let live = rt.block_on(SimServer::start(SimConfig::default())).unwrap();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    // The launched command is a stand-in that serves nothing; readiness is asked of the URLs.
    let plan = format!(
        r#"
[plan]
name = "ready-replicas"
[endpoints.e]
urls = ["{}", "{dead}"]
launch = "sleep 30"
ready_timeout = "2s"
[models.m]
served_name = "sim-model"
[datasets.d]
kind = "prompt"
text = "hello"
[defaults]
output_tokens = 2
[matrix]
load = {{ concurrency = 1, requests = 2 }}
"#,
        live.base_url()
    );
    std::fs::write(&path, plan).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["run", path.to_str().unwrap()])
        .args(["--out", dir.path().join("out").to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&dead),
        "the replica that is not ready is named: {err}"
    );
    let asked = live
        .received()
        .iter()
        .any(|r| r.path.ends_with("/v1/models"));
    assert!(asked, "the first replica was polled too");
    let posts = live
        .received()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 0, "nothing runs before every replica is ready");
}

/// The model list is read by one rule everywhere: a server that says it serves any name
/// (perfplan's simulator without `models`) lists the plan's model, in `check` as in the
/// connection test; one that lists names judges the plan's against them.
#[test]
fn check_reads_the_model_list_by_the_one_rule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    let plan = |models: &str| {
        format!(
            r#"
[plan]
name = "check-any"
[endpoints.sim]
base_url = "sim://check-any"
[endpoints.sim.sim]
{models}
[models.m]
served_name = "my-model"
[datasets.d]
kind = "prompt"
text = "hello"
[defaults]
output_tokens = 2
[matrix]
load = {{ concurrency = 1, requests = 2 }}
"#
        )
    };
    let check = |text: String| {
        std::fs::write(&path, text).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
            .args(["check", path.to_str().unwrap()])
            .env("NO_COLOR", "1")
            .env("COLUMNS", "400")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let any = check(plan(""));
    assert_eq!(verdict(&any, "┆ model listed "), "pass", "{any}");
    assert!(any.contains("serves any model name"), "{any}");
    let listed = check(plan("models = [\"other\"]"));
    assert_eq!(verdict(&listed, "┆ model listed "), "warn", "{listed}");
    assert!(listed.contains("`my-model` is not among other"), "{listed}");
}
