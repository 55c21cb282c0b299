//! The one URL rule through the CLI, against a simulator mounted under a path prefix (as
//! behind a gateway): every request perfplan sends (the load on the lean client and on
//! reqwest, the connection test, `check`, launch readiness, `/metrics` scrapes, cache
//! resets) keeps `base_url`'s path, and a `paths` override sends one API elsewhere. Every
//! test fails if any request reaches the bare path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

mod kept_support;
use kept_support::run_kept;
use std::path::Path;
use std::time::Duration;

use cli_support::{perfplan, report_json};
use perfplan::api::{build_body, ApiKind, BodyInput, Prompt};
use perfplan::engine::{
    CancelHandle, Endpoint, Load, PreparedRequest, RunConfig, Target, VecSource,
};
use perfplan::record::{Outcome, Phase, RequestRecord};
use perfplan::sim::{SimConfig, SimServer};
use perfplan::units::HumanDuration;
use serde_json::{json, Map, Value};

const MOUNT: &str = "/gateway/openai";

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/smollm2")
        .display()
        .to_string()
}

fn mounted(mount: &str) -> SimConfig {
    SimConfig {
        ttft_base: HumanDuration(Duration::from_millis(1)),
        itl_base: HumanDuration(Duration::from_millis(1)),
        mount: Some(mount.to_string()),
        ..SimConfig::default()
    }
}

/// One run per API (chat, completions and responses on a text prompt, embeddings and
/// rerank on random inputs), each with a cache reset before it; `endpoint` is the body of
/// the endpoint table.
fn plan(dir: &Path, endpoint: &str) -> String {
    let text = format!(
        r#"[plan]
name = "mounted"
[endpoints.gw]
{endpoint}
reset_cache_before = "each_run"
[models.m]
tokenizer = "{tok}"
[datasets.p]
kind = "prompt"
text = "hello there"
[datasets.e]
kind = "random_embedding"
input_tokens = 8
batch_size = 2
[datasets.r]
kind = "random_rerank"
query_tokens = 4
num_documents = 2
[defaults]
output_tokens = 4
[matrix]
dataset = ["p", "e", "r"]
api = ["chat", "completions", "responses", "embeddings", "rerank"]
exclude = [
  {{ dataset = "p", api = "embeddings" }}, {{ dataset = "p", api = "rerank" }},
  {{ dataset = "e", api = "chat" }}, {{ dataset = "e", api = "completions" }},
  {{ dataset = "e", api = "responses" }}, {{ dataset = "e", api = "rerank" }},
  {{ dataset = "r", api = "chat" }}, {{ dataset = "r", api = "completions" }},
  {{ dataset = "r", api = "responses" }}, {{ dataset = "r", api = "embeddings" }},
]
load = {{ concurrency = 2, requests = 4, warmup = 1 }}
"#,
        tok = fixture()
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The text without white space and table borders, so that a URL wrapped in a table cell
/// reads whole again.
fn squeezed(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && !"│┆║".contains(*c))
        .collect()
}

fn all_text(o: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every run done, its server-side counters scraped before and after, no cache reset failed.
fn assert_runs_used_the_control_plane(out: &Path) {
    let runs = report_json(&out.join("results.db"));
    assert_eq!(runs.len(), 5);
    for r in &runs {
        assert_eq!(r["status"], "done", "{r}");
        assert!(
            r["metrics"]["server_cache_hit_ratio"].is_number() || r["axes"]["api"] != "chat",
            "no /metrics scrape around {}: {r}",
            r["id"]
        );
        let warnings = r["warnings"].to_string();
        assert!(!warnings.contains("cache_reset_failed"), "{warnings}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_run_and_check_keeps_the_base_path() {
    let sim = SimServer::start(mounted(MOUNT)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", sim.base_url());
    assert!(base.ends_with("/gateway/openai/v1"), "{base}");
    let path = plan(dir.path(), &format!("base_url = \"{base}\""));
    let out = dir.path().join("out");
    let o = perfplan(&["run", &path, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", all_text(&o));
    assert_eq!(
        sim.unserved(),
        Vec::<String>::new(),
        "requests reached the bare path"
    );
    assert_runs_used_the_control_plane(&out);
    let seen: Vec<String> = sim.received().iter().map(|r| r.path.clone()).collect();
    for route in [
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/responses",
        "/v1/embeddings",
        "/v1/rerank",
        "/v1/models",
    ] {
        let want = format!("{MOUNT}{route}");
        assert!(seen.contains(&want), "no request on {want}: {seen:?}");
    }
    assert!(sim.scrapes() >= 10, "{} scrapes", sim.scrapes());
    assert_eq!(sim.cache_resets(), 5);

    let o = perfplan(&["check", &path]);
    let text = all_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(
        sim.unserved(),
        Vec::<String>::new(),
        "check reached the bare path"
    );
    let flat = squeezed(&text);
    for route in [
        "chat/completions",
        "completions",
        "responses",
        "embeddings",
        "rerank",
        "models",
    ] {
        assert!(flat.contains(&format!("{MOUNT}/v1/{route}")), "{text}");
    }
    assert!(flat.contains(&format!("cachecounterspassvllm:prefix_cache_hits_totalandvllm:prefix_cache_queries_totalon{}{MOUNT}/metrics", sim.base_url().split(MOUNT).next().unwrap())), "{text}");
}

#[test]
fn a_launched_server_under_a_prefix_is_ready_scraped_and_reset_there() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!(
        "base_url = \"http://127.0.0.1:{{port}}{MOUNT}/v1\"\n\
         launch = \"perfplan sim --port {{port}} --mount {MOUNT} --ttft-base 1ms --itl-base 1ms\"\n\
         ready_timeout = \"20s\""
    );
    let path = plan(dir.path(), &endpoint);
    let out = dir.path().join("out");
    let o = perfplan(&["run", &path, "--out", out.to_str().unwrap()]);
    let log = std::fs::read_to_string(out.join("servers/gw.log")).unwrap_or_default();
    assert!(o.status.success(), "{}\n{log}", all_text(&o));
    assert!(!log.contains("outside the mount"), "{log}");
    assert_runs_used_the_control_plane(&out);

    let o = perfplan(&["check", &path]);
    let text = all_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(!text.contains("outside the mount"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paths_override_sends_rerank_to_its_own_route() {
    let sim = SimServer::start(mounted("/compatible-mode")).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!(
        "base_url = \"{}/v1\"\npaths = {{ rerank = \"/compatible-mode/v2/rerank\" }}",
        sim.base_url()
    );
    let path = plan(dir.path(), &endpoint);
    let out = dir.path().join("out");
    let o = perfplan(&[
        "run",
        &path,
        "--only",
        "api=rerank",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", all_text(&o));
    let reranks: Vec<String> = sim
        .received()
        .iter()
        .filter(|r| r.path.contains("rerank"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(reranks.len(), 5, "{reranks:?}");
    assert!(
        reranks.iter().all(|p| p == "/compatible-mode/v2/rerank"),
        "{reranks:?}"
    );
    assert!(sim.unserved().is_empty(), "{:?}", sim.unserved());
    let o = perfplan(&["check", &path, "--only", "api=rerank"]);
    let text = all_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        squeezed(&text).contains("/compatible-mode/v2/rerank"),
        "{text}"
    );
}

/// One request of `kind`, built as the runner builds it.
fn request(kind: ApiKind, item: u64) -> PreparedRequest {
    let prompt = match kind {
        ApiKind::Embeddings => Prompt::Embedding(vec!["hello there".into()]),
        ApiKind::Rerank => Prompt::Rerank {
            query: "hello".into(),
            documents: vec!["there".into(), "world".into()],
        },
        _ => Prompt::Text("hello there".into()),
    };
    let fields: Map<String, Value> = json!({"max_tokens": 4}).as_object().cloned().unwrap();
    let input = BodyInput {
        model: "sim-model",
        prompt: &prompt,
        fields: &fields,
        stream: kind.can_stream(),
        include_usage: true,
        continuous_usage: false,
        reject_fields: &[],
    };
    let (path, body) = build_body(kind, &input).unwrap();
    PreparedRequest {
        item,
        phase: Phase::Measured,
        kind,
        path: path.into(),
        body,
        stream: kind.can_stream(),
        client_input_tokens: None,
        max_output_tokens: None,
        running_usage: false,
        headers: Vec::new(),
        session: None,
        class: None,
        cancel_after: None,
        tools: None,
        check: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_clients_send_every_api_under_the_prefix() {
    let sim = SimServer::start(mounted(MOUNT)).await.unwrap();
    for force_reqwest in [false, true] {
        for base in [format!("{}/v1", sim.base_url()), sim.base_url()] {
            let target = Target {
                base_url: base.clone(),
                force_reqwest,
                ..Target::default()
            };
            let ep = Endpoint::new(&target, 2).unwrap();
            let reqs: Vec<PreparedRequest> = ApiKind::ALL
                .into_iter()
                .enumerate()
                .map(|(i, k)| request(k, i as u64))
                .collect();
            let cfg = RunConfig {
                load: Load::Closed { concurrency: 1 },
                duration: None,
                grace: Duration::from_secs(1),
            };
            let out = run_kept(
                &ep,
                &mut VecSource::new(reqs),
                &cfg,
                &CancelHandle::new(),
                |_: &RequestRecord| {},
            )
            .await
            .unwrap();
            for r in &out.records {
                assert_eq!(
                    r.outcome,
                    Outcome::Ok,
                    "reqwest {force_reqwest}, {base}: {:?}",
                    r.error
                );
            }
            assert_eq!(out.records.len(), 5);
        }
    }
    assert!(sim.unserved().is_empty(), "{:?}", sim.unserved());
    let paths: Vec<String> = sim.received().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths.len(), 20);
    assert!(paths.iter().all(|p| p.starts_with(MOUNT)), "{paths:?}");
}

/// `perfplan validate` on a plan whose endpoints are `endpoints` (the rest is valid).
fn validate(dir: &Path, name: &str, endpoints: &str) -> String {
    let text = format!(
        "[plan]\nname = \"v\"\n{endpoints}\n[models.m]\n[datasets.p]\nkind = \"prompt\"\ntext = \"hi\"\n\
         [matrix]\nendpoint = \"a\"\nload = {{ concurrency = 1, requests = 1, warmup = 1 }}\n"
    );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let o = perfplan(&["validate", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).replace(&dir.display().to_string(), "[DIR]");
    format!("exit {:?}\n{err}", o.status.code())
}

#[test]
fn paths_and_tls_mistakes_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let typo = validate(
        dir.path(),
        "typo.toml",
        "[endpoints.a]\nbase_url = \"http://127.0.0.1:9/v1\"\npaths = { reranker = \"/v2/rerank\" }",
    );
    let wrong = validate(
        dir.path(),
        "wrong.toml",
        "[endpoints.a]\nbase_url = \"http://127.0.0.1:9\"\npaths = { chat = \"//other/x\", models = \"v1/my models\" }\n\
         tls = { insecure = true }\n\
         [endpoints.b]\nbase_url = \"https://127.0.0.1:9\"\ntls = { ca_file = \"missing.pem\", insecure = true }\n\
         [endpoints.c]\nbase_url = \"https://127.0.0.1:{port}#x\"",
    );
    let warned = validate(
        dir.path(),
        "insecure.toml",
        "[endpoints.a]\nbase_url = \"https://127.0.0.1:9/v1\"\ntls = { insecure = true }",
    );
    insta::assert_snapshot!(
        "paths_and_tls_mistakes",
        format!("{typo}\n{wrong}\n{warned}")
    );
}

#[test]
fn a_refused_connection_says_why_and_for_how_long_it_was_tried() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("base_url = \"http://127.0.0.1:{port}{MOUNT}\"\nready_timeout = \"1s\"");
    let path = plan(dir.path(), &endpoint);
    let o = perfplan(&[
        "run",
        &path,
        "--out",
        dir.path().join("out").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    // The cause in words (the refused socket), and a unit on the duration.
    assert!(err.contains("refused"), "{err}");
    let tried = err
        .split("connection refused, for ")
        .nth(1)
        .unwrap_or_default();
    let secs: String = tried
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    assert!(
        !secs.is_empty() && tried[secs.len()..].starts_with(" s ("),
        "{err}"
    );
}
