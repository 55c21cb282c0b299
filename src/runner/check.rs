//! `perfplan check`: before a long suite, one small request per endpoint × API × prompt
//! mode of the plan, and what the answers say: is the model listed, does a stream end
//! with usage (with `cached_tokens`), are all the fields the plan sends accepted, are
//! token-id prompts taken, are images received, are the cache counters on `/metrics`.
//! Produces rows of pass/warn/fail with advice; printing is the CLI's business.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::lifecycle::Servers;
use super::prepare;
use super::scrape::{self, CounterNames};
use super::sims::Sims;
use super::suite::{server_up, target};
use super::RunnerError;
use crate::engine::Target;
use crate::plan::{DatasetKind, LoadSpec, LoadedPlan, TokenRange, WarmupSpec};
use crate::planner::RunSpec;
use crate::tokenize::TokenizerCache;

/// How a check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// One line of the check table.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    pub endpoint: String,
    /// `server`, or the API and prompt mode (`chat text`, `completions token ids`, …).
    pub mode: String,
    pub check: String,
    pub verdict: Verdict,
    pub detail: String,
    pub advice: Option<String>,
}

/// Body keys that carry the prompt and the model: never candidates for `reject_fields`.
const CORE_KEYS: [&str; 6] = ["model", "messages", "prompt", "input", "query", "documents"];

/// Checks every endpoint of `runs`. Launched servers log under `log_dir/servers/`.
pub fn check_plan(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    log_dir: &Path,
) -> Result<Vec<CheckRow>, RunnerError> {
    let sims = Sims::start(runs, &plan.base_dir)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunnerError::Runtime)?;
    let mut servers = Servers::new(log_dir);
    let cache = TokenizerCache::new();
    let mut endpoints: Vec<&str> = Vec::new();
    for r in runs {
        if !endpoints.contains(&r.settings.endpoint.name.as_str()) {
            endpoints.push(&r.settings.endpoint.name);
        }
    }
    let result = rt.block_on(async {
        let mut rows = Vec::new();
        for name in endpoints {
            let mine: Vec<&RunSpec> = runs
                .iter()
                .filter(|r| r.settings.endpoint.name == name)
                .collect();
            let ctx = Ctx {
                plan,
                cache: &cache,
                sims: &sims,
            };
            rows.extend(ctx.endpoint(&mine, &mut servers).await?);
            servers.stop(name).await;
        }
        servers.stop_all().await;
        Ok(merge(rows))
    });
    sims.shutdown();
    result
}

/// Rows that differ only by mode become one row listing the modes (a field rejected in
/// every mode is one problem).
fn merge(rows: Vec<CheckRow>) -> Vec<CheckRow> {
    let mut out: Vec<CheckRow> = Vec::with_capacity(rows.len());
    for r in rows {
        let same = out.iter_mut().find(|o| {
            o.endpoint == r.endpoint
                && o.check == r.check
                && o.verdict == r.verdict
                && o.detail == r.detail
                && o.advice == r.advice
        });
        match same {
            Some(o) if o.verdict != Verdict::Pass => {
                o.mode.push_str(", ");
                o.mode.push_str(&r.mode);
            }
            _ => out.push(r),
        }
    }
    out
}

struct Ctx<'a> {
    plan: &'a LoadedPlan,
    cache: &'a TokenizerCache,
    sims: &'a Sims,
}

/// Longest detail shown in the table (server errors can be pages of validation output).
const DETAIL_CHARS: usize = 240;

fn row(run: &RunSpec, mode: &str, check: &str, verdict: Verdict, detail: String) -> CheckRow {
    let flat = detail.split_whitespace().collect::<Vec<_>>().join(" ");
    let detail = if flat.chars().count() > DETAIL_CHARS {
        format!("{}…", flat.chars().take(DETAIL_CHARS).collect::<String>())
    } else {
        flat
    };
    CheckRow {
        endpoint: run.settings.endpoint.name.clone(),
        mode: mode.to_string(),
        check: check.to_string(),
        verdict,
        detail,
        advice: None,
    }
}

fn advise(mut r: CheckRow, advice: impl Into<String>) -> CheckRow {
    r.advice = Some(advice.into());
    r
}

fn client(target: &Target) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(target.timeouts.connect)
        .timeout(target.timeouts.read.min(Duration::from_secs(120)))
        .build()
        .unwrap_or_default()
}

fn request(
    client: &reqwest::Client,
    target: &Target,
    method: reqwest::Method,
    path: &str,
) -> reqwest::RequestBuilder {
    let url = format!("{}{path}", target.base_url.trim_end_matches('/'));
    let mut req = client.request(method, url);
    if let Some(key) = &target.api_key {
        req = req.bearer_auth(key);
    }
    for (k, v) in &target.headers {
        req = req.header(k, v);
    }
    req
}

/// The API and prompt mode of a run, as shown in the table.
fn mode_of(run: &RunSpec) -> String {
    let prompt = if run.settings.tokenize_prompt {
        "token ids"
    } else {
        "text"
    };
    let images = if has_images(run) { " + images" } else { "" };
    format!(
        "{} {prompt}{images}",
        prepare::api_kind(run.settings.api).as_str()
    )
}

fn has_images(run: &RunSpec) -> bool {
    matches!(
        run.settings.dataset.spec.kind,
        DatasetKind::RandomImages | DatasetKind::Images
    )
}

/// The run cut down to one request with a short output.
fn small(run: &RunSpec) -> RunSpec {
    let mut r = run.clone();
    r.settings.load = LoadSpec {
        concurrency: Some(1),
        requests: Some(1),
        warmup: Some(WarmupSpec::Count(0)),
        ..LoadSpec::default()
    };
    if r.settings.request.output_tokens.is_some() {
        r.settings.request.output_tokens = Some(TokenRange::Fixed(8));
    }
    r
}

impl Ctx<'_> {
    async fn endpoint(
        &self,
        runs: &[&RunSpec],
        servers: &mut Servers,
    ) -> Result<Vec<CheckRow>, RunnerError> {
        let Some(first) = runs.first() else {
            return Ok(Vec::new());
        };
        let mut target = target(first, self.sims);
        if let Err(e) = server_up(first, &mut target, servers).await {
            let r = row(first, "server", "launch", Verdict::Fail, super::chain(&e));
            return Ok(vec![advise(
                r,
                "fix `launch` / `ready` of the endpoint (see the log)",
            )]);
        }
        let client = client(&target);
        let mut rows = vec![self.models(first, &target, &client).await];
        rows.push(counters(first, &target).await);
        let mut seen: Vec<String> = Vec::new();
        for run in runs {
            let mode = mode_of(run);
            if seen.contains(&mode) {
                continue;
            }
            seen.push(mode.clone());
            let prepared = prepare::prepare(&small(run), &self.plan.base_dir, self.cache, false)?;
            let Some(req) = prepared.requests.into_iter().next() else {
                continue;
            };
            rows.extend(probe(run, &mode, &target, &client, req).await);
        }
        Ok(rows)
    }

    async fn models(&self, run: &RunSpec, target: &Target, client: &reqwest::Client) -> CheckRow {
        let model = run.served_model();
        let answer = request(client, target, reqwest::Method::GET, "/v1/models")
            .send()
            .await;
        let r = |v, d| row(run, "server", "model listed", v, d);
        let resp = match answer {
            Ok(resp) => resp,
            Err(e) => return r(Verdict::Fail, format!("GET /v1/models: {e}")),
        };
        let status = resp.status();
        let body: Value =
            serde_json::from_str(&resp.text().await.unwrap_or_default()).unwrap_or(Value::Null);
        if !status.is_success() {
            return r(
                Verdict::Fail,
                format!("GET /v1/models answered HTTP {status}"),
            );
        }
        let ids: Vec<&str> = body
            .get("data")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|m| m.get("id")?.as_str()).collect())
            .unwrap_or_default();
        if ids.contains(&model) {
            r(Verdict::Pass, format!("`{model}` is served"))
        } else if ids.is_empty() {
            r(Verdict::Warn, "GET /v1/models lists no model".into())
        } else {
            advise(
                r(
                    Verdict::Warn,
                    format!("`{model}` is not among {}", ids.join(", ")),
                ),
                format!(
                    "if requests are refused, set served_name of model `{}` to one of them",
                    run.settings.model.name
                ),
            )
        }
    }
}

async fn counters(run: &RunSpec, target: &Target) -> CheckRow {
    let candidates = CounterNames::candidates(run.settings.endpoint.spec.metrics.as_ref());
    let found = scrape::scrape(&reqwest::Client::new(), &target.base_url, &candidates).await;
    let r = |v, d| row(run, "server", "cache counters", v, d);
    match found {
        Some((names, _)) => r(
            Verdict::Pass,
            format!("{} and {} on {}", names.hits, names.queries, names.path),
        ),
        None => {
            let looked: Vec<String> = candidates
                .iter()
                .map(|n| format!("{} / {} on {}", n.hits, n.queries, n.path))
                .collect();
            advise(
                r(Verdict::Warn, format!("not found: {}", looked.join("; "))),
                format!(
                    "server_cache_hit_ratio will be unknown; name the counters in \
                     [endpoints.{}.metrics] (SGLang exposes them with --enable-metrics)",
                    run.settings.endpoint.name
                ),
            )
        }
    }
}

mod probe;
use probe::probe;
