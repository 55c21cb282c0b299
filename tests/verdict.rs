//! Every run's verdict through the CLI, against servers that make numbers untrustworthy
//! (`hostile_support::trust`): usage that disagrees with the stream, a buffered stream, a
//! whole body to a streamed request, failures above the threshold, counts without usage.
//! Each is judged `invalid` (or `suspect`) with its reason in every format; a gate on an
//! invalid run fails with exit 12 whatever its value; `--accept` lets a known reason pass
//! and is recorded; `[trust] strict` fails suspect runs too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
mod hostile_support;

use std::path::{Path, PathBuf};

use cli_support::perfplan;
use hostile_support::HostileServer;
use serde_json::Value;

const GATE_FAILED: i32 = 1;
const INVALID_RUN: i32 = 12;

fn fixture_tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

fn server() -> HostileServer {
    let mut routes = hostile_support::trust::ROUTES.to_vec();
    routes.extend(
        hostile_support::routes()
            .into_iter()
            .filter(|r| r.name == "no_usage" || r.name == "content"),
    );
    HostileServer::start_with(routes)
}

/// A plan of one run of `requests` against `route`, with `extra` TOML at the end.
fn plan(dir: &Path, server: &HostileServer, route: &str, extra: &str) -> PathBuf {
    let text = format!(
        "[plan]\nname = \"verdict\"\nseed = 3\n[models.m]\ntokenizer = \"{}\"\n\
         [datasets.p]\nkind = \"prompt\"\ntext = \"Count to eight.\"\n\
         [endpoints.e]\nbase_url = \"{}\"\ntimeouts = {{ read = \"5s\", total = \"20s\" }}\n\
         [defaults]\noutput_tokens = 8\n\
         [matrix]\nload = {{ concurrency = 2, requests = 6, warmup = 2 }}\n{extra}\n",
        fixture_tokenizer().display(),
        server.url(route)
    );
    let path = dir.join(format!("{route}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The runs of `db` as `report --format json` gives them (whatever its gates say).
fn report_json(db: &Path) -> Vec<Value> {
    let o = perfplan(&["report", db.to_str().unwrap(), "--format", "json"]);
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
        .as_array()
        .unwrap()
        .clone()
}

/// Runs `plan` into `dir/out` with `args`; the exit code, its output and the runs' JSON.
fn run(plan: &Path, dir: &Path, args: &[&str]) -> (i32, String, Vec<Value>) {
    let out = dir.join("out");
    let mut all = vec![
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let o = perfplan(&all);
    let stderr = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let runs = report_json(&out.join("results.db"));
    (o.status.code().unwrap_or(-1), stderr, runs)
}

/// The run's reasons but `client_bound` (accepted in every run here).
fn reasons(run: &Value) -> Vec<(String, String, bool)> {
    run["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["code"] != "client_bound")
        .map(|r| {
            (
                r["code"].as_str().unwrap().to_string(),
                r["severity"].as_str().unwrap().to_string(),
                r["accepted"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The text of the run's reason `code`.
fn text_of(run: &Value, code: &str) -> String {
    run["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["code"] == code)
        .and_then(|r| r["text"].as_str())
        .unwrap_or_else(|| panic!("no {code} in {run}"))
        .to_string()
}

fn has(run: &Value, code: &str, severity: &str) -> bool {
    reasons(run)
        .iter()
        .any(|(c, s, a)| c == code && s == severity && !a)
}

#[test]
fn usage_that_disagrees_with_the_stream_is_invalid_and_fails_every_gate() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &s,
        "usage_overcount",
        "[gates]\nsuccess_ratio = \">= 0.99\"",
    );
    let (code, stderr, runs) = run(&p, dir.path(), &[]);
    assert_eq!(code, INVALID_RUN, "{stderr}");
    let r = &runs[0];
    assert_eq!(r["verdict"]["status"], "invalid", "{r}");
    assert!(has(r, "tokens_not_conserved", "invalid"), "{r}");
    let text = text_of(r, "tokens_not_conserved");
    assert!(
        text.contains("usage says 800 output tokens, the client received 8"),
        "{text}"
    );
    assert!(stderr.contains("verdict: "), "{stderr}");
    assert!(
        stderr.contains("not signed off whatever its value"),
        "{stderr}"
    );
    // The verdict leads the report, in every format.
    let db = dir.path().join("out/results.db");
    let table = perfplan(&["report", db.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.find("verdicts: 1 invalid").unwrap() < table.find("ttft").unwrap(),
        "{table}"
    );
    assert!(table.contains("invalid tokens_not_conserved:"), "{table}");
    let csv = perfplan(&["report", db.to_str().unwrap(), "--format", "csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(
        csv.starts_with("id,ordinal,status,verdict,verdict_reasons,"),
        "{csv}"
    );
    assert!(csv.contains(",done,invalid,tokens_not_conserved,"), "{csv}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    let banner = html.find("class=\"verdicts invalid\"").unwrap();
    assert!(banner < html.find("<h2>Results</h2>").unwrap());
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("**verdicts: 1 invalid**"), "{md}");
    // Accepted, the same run passes its gate; the acceptance is kept in the database.
    let dir2 = tempfile::tempdir().unwrap();
    let (code, stderr, runs) = run(&p, dir2.path(), &["--accept", "tokens_not_conserved"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(runs[0]["verdict"]["status"], "valid");
    assert_eq!(
        reasons(&runs[0]),
        [(
            "tokens_not_conserved".to_string(),
            "invalid".to_string(),
            true
        )]
    );
    let bad = perfplan(&[
        "run",
        p.to_str().unwrap(),
        "--accept",
        "token_not_conserved",
    ]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("did you mean `tokens_not_conserved`?"),
        "{err}"
    );
}

#[test]
fn a_buffered_stream_is_not_observed_and_its_timings_not_measured() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &s, "buffered", "");
    let (code, stderr, runs) = run(&p, dir.path(), &[]);
    assert_eq!(code, 0, "no gate, no failing exit: {stderr}");
    let r = &runs[0];
    assert!(has(r, "stream_not_observed", "invalid"), "{r}");
    let text = text_of(r, "stream_not_observed");
    assert!(text.contains("arrived in one burst"), "{text}");
    assert!(text.contains("proxy"), "{text}");
    for m in ["ttft_p50", "itl_mean", "tpot_mean"] {
        assert_eq!(r["metrics"][m], Value::Null, "{m} is not measured: {r}");
    }
    assert!(r["metrics"]["latency_p50"].as_f64().unwrap() >= 300.0);
}

#[test]
fn a_whole_body_to_a_streamed_request_is_not_observed() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &s, "body_for_stream", "");
    let (_, _, runs) = run(&p, dir.path(), &[]);
    let r = &runs[0];
    assert!(has(r, "stream_not_observed", "invalid"), "{r}");
    let text = text_of(r, "stream_not_observed");
    assert!(text.contains("whole JSON body"), "{text}");
}

#[test]
fn failures_above_the_threshold_make_the_run_invalid() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &s, "every_third_fails", "");
    let (_, _, runs) = run(&p, dir.path(), &[]);
    let r = &runs[0];
    assert_eq!(r["status"], "done", "{r}");
    assert!(has(r, "failures", "invalid"), "{r}");
    // Below the threshold (here raised above a third), a note only.
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &s,
        "every_third_fails",
        "[trust]\nmax_failed_share = 0.5",
    );
    let (_, _, runs) = run(&p, dir.path(), &[]);
    assert!(!has(&runs[0], "failures", "invalid"), "{}", runs[0]);
}

#[test]
fn estimated_counts_are_suspect_and_fail_gates_only_when_strict() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let gate = "[gates]\nsuccess_ratio = \">= 0.99\"\n[trust]\nburst_share = 1.0";
    let p = plan(dir.path(), &s, "no_usage", gate);
    let (code, stderr, runs) = run(&p, dir.path(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(runs[0]["verdict"]["status"], "suspect", "{}", runs[0]);
    assert!(has(&runs[0], "counts_estimated", "suspect"));
    assert!(runs[0]["gates"][0]["message"]
        .as_str()
        .unwrap()
        .contains("note: run is suspect"));
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &s,
        "no_usage",
        &format!("{gate}\nstrict = true"),
    );
    let (code, stderr, _) = run(&p, dir.path(), &[]);
    assert_eq!(code, INVALID_RUN, "{stderr}");
}

#[test]
fn a_valid_run_fails_a_gate_on_its_value_as_before() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &s,
        "content",
        "[gates]\nsuccess_ratio = \"< 0.5\"\n[trust]\nburst_share = 1.0",
    );
    let (code, stderr, runs) = run(&p, dir.path(), &[]);
    assert_eq!(runs[0]["verdict"]["status"], "valid", "{}", runs[0]);
    assert_eq!(code, GATE_FAILED, "{stderr}");
}

#[test]
fn a_relative_gate_without_a_baseline_is_a_validation_error() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &s,
        "content",
        "[gates]\nsuccess_ratio = \">= 99%\"",
    );
    for args in [
        vec!["validate", p.to_str().unwrap()],
        vec!["run", p.to_str().unwrap()],
    ] {
        let o = perfplan(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("did you mean `>= 0.99`?"), "{err}");
        assert!(err.contains("content.toml:17:17"), "located: {err}");
    }
    assert_eq!(s.seen("content"), 0, "nothing was sent");
    let o = perfplan(&["run", p.to_str().unwrap(), "--gate", "ttft_p99=<= +5%"]);
    assert_eq!(o.status.code(), Some(2));
    let bad = plan(
        dir.path(),
        &s,
        "content",
        "[trust]\naccept = [\"cache_leek\"]",
    );
    let o = perfplan(&["validate", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `cache_leak`?"), "{err}");
}

/// An SLA search cannot pass a step on numbers perfplan cannot vouch for: against a server
/// whose usage says 800 tokens where 8 arrived, every probe meets the TTFT objective but
/// is invalid (`tokens_not_conserved`), so the lowest step fails on the verdict and the
/// search says why.
#[test]
fn a_search_step_with_an_invalid_probe_fails_on_the_verdict() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[plan]\nname = \"verdict-search\"\nseed = 3\n[models.m]\ntokenizer = \"{}\"\n\
         [datasets.p]\nkind = \"prompt\"\ntext = \"Count to eight.\"\n\
         [endpoints.e]\nbase_url = \"{}\"\ntimeouts = {{ read = \"5s\", total = \"20s\" }}\n\
         [defaults]\noutput_tokens = 8\n[trust]\naccept = [\"client_bound\"]\n\
         [matrix]\nload = {{ search = \"concurrency\", slo = {{ ttft_p99 = \"<= 10s\" }}, \
         min = 1, max = 2, requests_per_step = 6 }}\n",
        fixture_tokenizer().display(),
        server.url("usage_overcount")
    );
    let plan = dir.path().join("search.toml");
    std::fs::write(&plan, text).unwrap();
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&o.stderr);
    let store = perfplan::store::Store::open(&out).unwrap();
    let searches = store.searches().unwrap();
    assert_eq!(searches.len(), 1, "{said}");
    let s = &searches[0];
    assert_eq!(s.outcome, "min_fails", "{s:?}");
    assert_eq!(s.failed_metric.as_deref(), Some("verdict"), "{s:?}");
    assert!(
        s.message.contains("invalid (tokens_not_conserved)"),
        "{}",
        s.message
    );
    // The same server with the reason accepted: the step passes on its TTFT.
    let accepted = std::fs::read_to_string(&plan).unwrap().replace(
        "accept = [\"client_bound\"]",
        "accept = [\"client_bound\", \"tokens_not_conserved\"]",
    );
    std::fs::write(&plan, accepted).unwrap();
    let out2 = dir.path().join("out2");
    perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
    ]);
    let again = perfplan::store::Store::open(&out2)
        .unwrap()
        .searches()
        .unwrap();
    assert_ne!(again[0].outcome, "min_fails", "{:?}", again[0]);
}
