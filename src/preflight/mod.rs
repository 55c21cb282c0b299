//! `perfplan check`: before a long suite, one small request per endpoint × API × prompt
//! mode of the plan, and what the answers say: is the model listed, does a stream end
//! with usage (with `cached_tokens`), are all the fields the plan sends accepted, are
//! token-id prompts taken, are images received, are the cache counters on `/metrics`.
//! Produces rows of pass/warn/fail with advice; printing is the CLI's business.

use std::path::Path;

use crate::control::{self, chain, explain, Route};
use crate::plan::{DatasetPlan, LoadedPlan};
use crate::planner::{OutputLen, RunSpec};
use crate::servers::sims::Sims;
use crate::servers::Servers;
use crate::suite::driver::{server_up, target};
use crate::suite::SuiteError;
use crate::telemetry::{self, CounterNames};
use crate::tokenize::TokenizerCache;
use crate::workload::prepare::{self, Requests};

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
pub(crate) struct CheckRow {
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
pub(crate) fn check_plan(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    log_dir: &Path,
) -> Result<Vec<CheckRow>, SuiteError> {
    let sims = Sims::start(runs, &plan.base_dir)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SuiteError::Runtime)?;
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
                salt: salt::fresh(),
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
    /// This check's salt, put before every probe's prompt (`salt`).
    salt: String,
}

/// Longest detail shown in the table (server errors can be pages of validation output).
const DETAIL_CHARS: usize = 240;

/// `check` probes with a run's first request: its list is built first.
const LIST: prepare::Needs = prepare::Needs {
    list: true,
    sharded: false,
};

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

/// The API and prompt mode of a run, as shown in the table.
fn mode_of(run: &RunSpec) -> String {
    let prompt = if run.settings.tokenize_prompt {
        "token ids"
    } else {
        "text"
    };
    let images = if has_images(run) { " + images" } else { "" };
    format!("{} {prompt}{images}", run.request.api.as_str())
}

fn has_images(run: &RunSpec) -> bool {
    matches!(
        run.dataset,
        DatasetPlan::RandomImages { .. } | DatasetPlan::Images { .. }
    )
}

/// The run cut down to one request with a short output.
fn small(run: &RunSpec) -> RunSpec {
    let mut r = run.single_request();
    // A plan that sets an output length gets a short fixed one; one that sets none keeps
    // the dataset's recorded length (or none), as its runs do.
    if r.request.output != OutputLen::Recorded {
        r.request.output = OutputLen::Fixed(8);
    }
    r
}

impl Ctx<'_> {
    async fn endpoint(
        &self,
        runs: &[&RunSpec],
        servers: &mut Servers,
    ) -> Result<Vec<CheckRow>, SuiteError> {
        let Some(first) = runs.first() else {
            return Ok(Vec::new());
        };
        let mut target = target(first, self.sims, &self.plan.base_dir);
        if let Err(e) = server_up(first, &mut target, servers).await {
            let r = row(first, "server", "launch", Verdict::Fail, chain(&e));
            return Ok(vec![advise(
                r,
                "fix `launch` / `ready` of the endpoint (see the log)",
            )]);
        }
        let client = match target.control(
            target
                .timeouts
                .read
                .min(crate::control::timeouts::CHECK_REQUEST),
        ) {
            Ok(c) => c,
            Err(e) => {
                let r = row(first, "server", "settings", Verdict::Fail, chain(&e));
                return Ok(vec![advise(
                    r,
                    "fix base_url, `paths` or `tls` of the endpoint",
                )]);
            }
        };
        let mut rows = url_rows(first, runs, &client);
        let (models, tls_failure) = self.models(first, &client).await;
        rows.extend(tls_row(first, &client, tls_failure.as_deref()));
        if tls_failure.is_some() {
            // Nothing else can pass before the handshake does.
            return Ok(rows);
        }
        rows.push(models);
        rows.extend(self.other_models(first, runs, &client).await);
        // From here on, what every replica is asked too (`replicas::rows` compares).
        let own = rows.len();
        rows.push(counters(first, &client).await);
        rows.extend(telemetry_rows::rows(first, &target).await);
        let probes = self.probes(runs)?;
        for p in &probes {
            rows.extend(probe(p.run, &p.mode, &client, p.req.clone()).await);
        }
        let first_rows = rows[own..].to_vec();
        rows.extend(replicas::rows(self, first, &target, &probes, &first_rows).await);
        Ok(rows)
    }

    /// The first request of each API and prompt mode of the endpoint's runs.
    fn probes<'r>(&self, runs: &[&'r RunSpec]) -> Result<Vec<replicas::Probe<'r>>, SuiteError> {
        let mut out: Vec<replicas::Probe<'r>> = Vec::new();
        for run in runs {
            let mode = mode_of(run);
            if out.iter().any(|p| p.mode == mode) {
                continue;
            }
            let prepared = prepare::prepare(&small(run), &self.plan.base_dir, self.cache, LIST)?;
            let tokenizer = prepared.tokenizer.clone();
            let first = match prepared.requests {
                Requests::List { list, .. } | Requests::Trace { list, .. } => {
                    list.requests.into_iter().next()
                }
                Requests::AsSent(_) | Requests::Conversations { .. } => None,
            };
            if let Some(mut req) = first {
                // Never the run's own prompt: a probe must not warm a cold run's prefix.
                if let Some(body) = salt::salted(&req.body, &self.salt, tokenizer.as_deref()) {
                    req.body = body.into();
                }
                out.push(replicas::Probe { run, mode, req });
            }
        }
        Ok(out)
    }

    /// The model-list row, and what failed in words when the TLS handshake did.
    async fn models(&self, run: &RunSpec, client: &control::Client) -> (CheckRow, Option<String>) {
        let model = run.served_model();
        let url = client.urls().of(Route::Models);
        let answer = client.get(Route::Models).send().await;
        let r = |v, d| row(run, "server", "model listed", v, d);
        let resp = match answer {
            Ok(resp) => resp,
            Err(e) => {
                let tls = control::tls_problem(&e).map(|_| explain(&e));
                return (r(Verdict::Fail, format!("GET {url}: {}", explain(&e))), tls);
            }
        };
        (self.listed(run, model, resp).await, None)
    }

    async fn listed(&self, run: &RunSpec, model: &str, resp: reqwest::Response) -> CheckRow {
        let table = &run.settings.model.name;
        match model_ids(resp).await {
            Ok((url, ids)) => listed_row(run, (model, table), &url, ids.as_deref()),
            Err(detail) => row(run, "server", "model listed", Verdict::Fail, detail),
        }
    }

    /// A row for every other model the endpoint's runs name (another run's model, a mix
    /// class's), from one more read of the model list.
    async fn other_models(
        &self,
        first: &RunSpec,
        runs: &[&RunSpec],
        client: &control::Client,
    ) -> Vec<CheckRow> {
        let mut wanted: Vec<(&RunSpec, String, String)> = Vec::new();
        for run in runs {
            let mut names = vec![(
                run.served_model().to_string(),
                run.settings.model.name.clone(),
            )];
            for (class, plan) in run
                .settings
                .mix
                .iter()
                .flatten()
                .zip(crate::workload::mix::class_requests(run))
            {
                let table = class
                    .model
                    .as_ref()
                    .map_or(&run.settings.model.name, |m| &m.name);
                names.push((plan.model, table.clone()));
            }
            for (served, table) in names {
                let known = served == first.served_model() || wanted.iter().any(|w| w.1 == served);
                if !known {
                    wanted.push((run, served, table));
                }
            }
        }
        if wanted.is_empty() {
            return Vec::new();
        }
        let listed = match client.get(Route::Models).send().await {
            Ok(resp) => model_ids(resp).await,
            Err(e) => Err(explain(&e)),
        };
        wanted
            .iter()
            .map(|(run, served, table)| match &listed {
                Ok((url, ids)) => listed_row(run, (served, table), url, ids.as_deref()),
                Err(detail) => row(run, "server", "model listed", Verdict::Fail, detail.clone()),
            })
            .collect()
    }
}

/// The model ids the server lists (with the URL that answered), read by the one rule of
/// `api::models` (`None`: the server serves any name), or why it listed none.
async fn model_ids(resp: reqwest::Response) -> Result<(String, Option<Vec<String>>), String> {
    let url = resp.url().to_string();
    let status = resp.status();
    let body = resp.bytes().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!("GET {url} answered HTTP {status}"));
    }
    let (models, any) = crate::api::models::listed(&body);
    if any {
        return Ok((url, None));
    }
    Ok((url, Some(models.into_iter().map(|m| m.id).collect())))
}

/// Whether `model` (sent by the runs of model table `table`) is among the listed `ids`
/// (`None`: the server serves any name).
fn listed_row(
    run: &RunSpec,
    (model, table): (&str, &str),
    url: &str,
    ids: Option<&[String]>,
) -> CheckRow {
    let r = |v, d| row(run, "server", "model listed", v, d);
    let Some(ids) = ids else {
        return r(
            Verdict::Pass,
            format!("`{model}` is served (GET {url}: the server serves any model name)"),
        );
    };
    if ids.iter().any(|i| i == model) {
        r(Verdict::Pass, format!("`{model}` is served"))
    } else if ids.is_empty() {
        r(Verdict::Warn, format!("GET {url} lists no model"))
    } else {
        advise(
            r(
                Verdict::Warn,
                format!("`{model}` is not among {}", ids.join(", ")),
            ),
            format!("if requests are refused, set served_name of model `{table}` to one of them"),
        )
    }
}

/// The URL each API of the endpoint's runs (and the model list) resolves to, a row each.
fn url_rows(first: &RunSpec, runs: &[&RunSpec], client: &control::Client) -> Vec<CheckRow> {
    let mut routes: Vec<Route> = Vec::new();
    for r in runs {
        let route = Route::Api(r.request.api);
        if !routes.contains(&route) {
            routes.push(route);
        }
    }
    routes.push(Route::Models);
    routes
        .into_iter()
        .map(|r| {
            let url = client.urls().of(r).to_string();
            row(
                first,
                "server",
                &format!("{} url", r.name()),
                Verdict::Pass,
                url,
            )
        })
        .collect()
}

/// How the certificate is checked, for an endpoint that uses https (a warning when not
/// verified), or why the handshake failed.
fn tls_row(run: &RunSpec, client: &control::Client, failure: Option<&str>) -> Option<CheckRow> {
    let urls = client.urls();
    let https = Route::ALL.iter().any(|r| urls.of(*r).scheme() == "https");
    if !https {
        return None;
    }
    let tls = client.tls();
    if let Some(why) = failure {
        let r = row(run, "server", "tls", Verdict::Fail, why.to_string());
        return Some(advise(r, tls.describe()));
    }
    let verdict = if tls.insecure {
        Verdict::Warn
    } else {
        Verdict::Pass
    };
    let r = row(run, "server", "tls", verdict, tls.describe());
    Some(if tls.insecure {
        advise(
            r,
            "trust the server's CA with `tls.ca_file` instead of `insecure`",
        )
    } else {
        r
    })
}

async fn counters(run: &RunSpec, client: &control::Client) -> CheckRow {
    let candidates = CounterNames::candidates(run.settings.endpoint.spec.metrics.as_ref());
    let found = telemetry::scrape(client, &candidates).await;
    let r = |v, d| row(run, "server", "cache counters", v, d);
    match found {
        Some((names, _)) => {
            let at = client
                .urls()
                .server(&names.path)
                .map_or_else(|_| names.path.clone(), |u| u.to_string());
            r(
                Verdict::Pass,
                format!("{} and {} on {at}", names.hits, names.queries),
            )
        }
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
mod replicas;
mod salt;
mod telemetry_rows;
use probe::probe;
