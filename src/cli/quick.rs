//! `perfplan run --url URL --model M [...]`: a plan-free quick look. The flags become a
//! plan's TOML text, which is loaded and validated like any file (so the runs, the
//! database and the report are a plan run's) and, with `--save-plan FILE`, written out:
//! the saved file expands to the same runs, so a quick look becomes a versioned suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{json, Map, Value};

use super::exit;
use super::failure::Failure;
use crate::evalscope::url::{paths_key, split};
use crate::plan::{emit, load_plan, process_env, ApiSpec, LoadOptions, LoadedPlan};

/// The prompt of a quick run with neither `--dataset` nor `--input-tokens`.
const DEFAULT_PROMPT: &str =
    "Write a short story about a lighthouse keeper who finds a message in a bottle.";

#[derive(Debug, Clone, Default, Args)]
pub struct QuickArgs {
    /// Plan-free run: the server (`http://host:8000`, or an API URL such as
    /// `…/v1/chat/completions`, which also sets --api).
    #[arg(long, value_name = "URL", conflicts_with = "plan")]
    pub url: Option<String>,
    /// The model name the server knows (default: the only model the server lists).
    #[arg(long, value_name = "M", requires = "url")]
    pub model: Option<String>,
    /// The API (default chat, or what the URL's path names).
    #[arg(long, value_enum, requires = "url")]
    pub api: Option<QuickApi>,
    /// Closed-loop tiers: requests in flight, comma-separated (`1,4,8`).
    #[arg(long, value_delimiter = ',', requires = "url", conflicts_with = "rate")]
    pub concurrency: Vec<u32>,
    /// Measured requests of each tier, paired with --concurrency (or --rate) position by
    /// position (default 4 × concurrency, at least 32).
    #[arg(long, value_delimiter = ',', requires = "url")]
    pub requests: Vec<u32>,
    /// Open-loop tiers: arrivals per second, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "url")]
    pub rate: Vec<f64>,
    /// Random prompts of exactly this many tokens (needs --tokenizer).
    #[arg(long, value_name = "N", requires = "url")]
    pub input_tokens: Option<u32>,
    /// The output limit of every request.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub output_tokens: u32,
    /// The model's tokenizer folder (tokenizer.json).
    #[arg(long, value_name = "DIR", requires = "url")]
    pub tokenizer: Option<PathBuf>,
    /// Prompts from a file: .jsonl (JSONL), .json (ShareGPT), a folder (images), else one per line.
    #[arg(long, value_name = "FILE", requires = "url")]
    pub dataset: Option<PathBuf>,
    /// The variable holding the API key (default: none sent).
    #[arg(long, value_name = "VAR", requires = "url")]
    pub api_key_env: Option<String>,
    /// Also write the equivalent plan to FILE (never over an existing file).
    #[arg(long, value_name = "FILE", requires = "url")]
    pub save_plan: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QuickApi {
    Chat,
    Completions,
    Responses,
    Embeddings,
    Rerank,
}

impl From<QuickApi> for ApiSpec {
    fn from(a: QuickApi) -> ApiSpec {
        match a {
            QuickApi::Chat => ApiSpec::Chat,
            QuickApi::Completions => ApiSpec::Completions,
            QuickApi::Responses => ApiSpec::Responses,
            QuickApi::Embeddings => ApiSpec::Embeddings,
            QuickApi::Rerank => ApiSpec::Rerank,
        }
    }
}

/// A path given on the command line, as the plan at `plan_path` must write it.
fn plan_relative(path: &Path, plan_path: &Path) -> String {
    let plan_dir = plan_path.parent().unwrap_or(Path::new(""));
    let text =
        if path.is_absolute() || plan_dir.as_os_str().is_empty() || plan_dir == Path::new(".") {
            path.to_path_buf()
        } else {
            std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
        };
    text.display().to_string().replace("${", "$${")
}

fn loads(q: &QuickArgs) -> Result<Vec<Value>, String> {
    let (key, values): (&str, Vec<Value>) = if q.rate.is_empty() {
        let c = if q.concurrency.is_empty() {
            vec![1]
        } else {
            q.concurrency.clone()
        };
        ("concurrency", c.into_iter().map(Value::from).collect())
    } else {
        ("rate", q.rate.iter().map(|r| json!(r)).collect())
    };
    let requests = match q.requests.len() {
        0 => None,
        1 => Some(vec![q.requests[0]; values.len()]),
        n if n == values.len() => Some(q.requests.clone()),
        n => {
            return Err(format!(
                "--requests has {n} values and --{key} {}: they pair up position by position (or give one --requests for every tier)",
                values.len()
            ))
        }
    };
    Ok(values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let c = v.as_u64().unwrap_or(1) as u32;
            let n = requests.as_ref().map_or((4 * c).max(32), |r| r[i]);
            if key == "concurrency" {
                json!({"concurrency": v, "requests": n, "warmup": c})
            } else {
                json!({"rate": v, "requests": n})
            }
        })
        .collect())
}

fn dataset(q: &QuickArgs, plan_path: &Path) -> Result<(String, Map<String, Value>), String> {
    let mut d = Map::new();
    if let Some(path) = &q.dataset {
        let kind = match path.extension().and_then(|e| e.to_str()) {
            _ if path.is_dir() => "images",
            Some("jsonl") => "jsonl",
            Some("json") => "sharegpt",
            _ => "lines",
        };
        d.insert("kind".into(), kind.into());
        d.insert("path".into(), plan_relative(path, plan_path).into());
        return Ok(("file".into(), d));
    }
    if let Some(n) = q.input_tokens {
        if q.tokenizer.is_none() {
            return Err(
                "--input-tokens needs --tokenizer DIR: prompts are cut to exact token counts with the model's tokenizer".into(),
            );
        }
        d.insert("kind".into(), "random".into());
        d.insert("input_tokens".into(), n.into());
        return Ok((format!("random-{n}"), d));
    }
    d.insert("kind".into(), "prompt".into());
    d.insert("text".into(), DEFAULT_PROMPT.into());
    Ok(("prompt".into(), d))
}

/// The plan of the flags, as a table.
pub(crate) fn plan_table(q: &QuickArgs, plan_path: &Path) -> Result<Map<String, Value>, String> {
    let url = q.url.as_deref().unwrap_or_default();
    let model = q.model.as_deref().unwrap_or_default();
    let parts = split(url);
    let api = q
        .api
        .map(ApiSpec::from)
        .or(parts.api)
        .unwrap_or(ApiSpec::Chat);
    let mut ep = Map::new();
    ep.insert(
        "base_url".into(),
        parts.base_url.replace("${", "$${").into(),
    );
    if let Some(path) = parts.path_override.filter(|_| parts.api == Some(api)) {
        ep.insert("paths".into(), json!({ paths_key(api): path }));
    }
    if api != ApiSpec::Chat {
        ep.insert("api".into(), serde_json::to_value(api).unwrap_or_default());
    }
    if let Some(var) = &q.api_key_env {
        ep.insert("api_key_env".into(), var.clone().into());
    }
    let mut m = Map::new();
    m.insert("served_name".into(), model.replace("${", "$${").into());
    if let Some(t) = &q.tokenizer {
        m.insert("tokenizer".into(), plan_relative(t, plan_path).into());
    }
    let (ds_name, ds) = dataset(q, plan_path)?;
    let model_key = crate::evalscope::slug(model.rsplit('/').next().unwrap_or(model));
    let mut plan = Map::new();
    plan.insert("plan".into(), json!({"name": "quick", "seed": 42}));
    plan.insert("endpoints".into(), json!({ "server": ep }));
    plan.insert("models".into(), json!({ model_key: m }));
    plan.insert("datasets".into(), json!({ ds_name: ds }));
    plan.insert("defaults".into(), json!({"output_tokens": q.output_tokens}));
    plan.insert("matrix".into(), json!({"load": loads(q)?}));
    Ok(plan)
}

/// The model of a run without `--model`: the only one the server at `url` lists; fails
/// when the server is unreachable, or lists several models or none (`--model` is needed,
/// and the list says which).
fn only_served_model(q: &QuickArgs) -> Result<String, Failure> {
    let url = q.url.as_deref().unwrap_or_default();
    let parts = split(url);
    let key = q.api_key_env.as_deref().and_then(|v| std::env::var(v).ok());
    let tls = crate::control::Tls::default();
    let spec = crate::control::ClientSpec {
        base_url: &parts.base_url,
        paths: &[],
        tls: &tls,
        api_key: key.as_deref(),
        headers: &[],
        connect_timeout: crate::control::timeouts::CONNECT,
        timeout: crate::control::timeouts::CONNECTION_TEST_REQUEST,
    };
    let fail = |why: String| Failure::new(exit::ENDPOINT, why);
    let client = crate::control::Client::new(&spec)
        .map_err(|e| fail(format!("--url {url}: {}", crate::control::chain(&e))))?;
    let models_url = client.urls().of(crate::control::Route::Models).clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail(format!("cannot start the async runtime: {e}")))?;
    let listed = runtime.block_on(async {
        let resp = client.get(crate::control::Route::Models).send().await?;
        let resp = resp.error_for_status()?;
        resp.bytes().await
    });
    let body = listed.map_err(|e| {
        fail(format!(
            "cannot list the models of {models_url} to choose one: {}; give --model",
            crate::control::cause(&e)
        ))
    })?;
    match crate::api::models::model_ids(&body).as_slice() {
        [one] => {
            eprintln!("perfplan: --model {one} (the only model {models_url} lists)");
            Ok(one.clone())
        }
        [] => Err(fail(format!("{models_url} lists no model: give --model"))),
        many => Err(Failure::new(
            exit::INVALID,
            format!(
                "{models_url} lists {} models; choose one with --model: {}",
                many.len(),
                many.join(", ")
            ),
        )),
    }
}

/// The plan of a quick run, loaded like a file, and saved with `--save-plan`.
pub fn load(q: &QuickArgs) -> Result<LoadedPlan, Failure> {
    let mut q = q.clone();
    if q.model.is_none() {
        q.model = Some(only_served_model(&q)?);
    }
    let q = &q;
    let path = q
        .save_plan
        .clone()
        .unwrap_or_else(|| PathBuf::from("perfplan-run.toml"));
    let table = plan_table(q, &path).map_err(|msg| Failure::new(exit::INVALID, msg))?;
    let header = [
        ":schema plan.schema.json".to_string(),
        format!(
            "Written by `perfplan run --url {} --save-plan`; `perfplan run {}` runs the same runs.",
            q.url.as_deref().unwrap_or_default(),
            path.display()
        ),
    ];
    let text = emit::to_toml(&table, &header);
    let mut files = BTreeMap::new();
    files.insert(path.display().to_string(), text.clone());
    let opts = LoadOptions {
        files: Some(&files),
        ..LoadOptions::new(Vec::new(), &process_env)
    };
    let plan = load_plan(&path, &opts)
        .map_err(|report| Failure::rendered(exit::INVALID, report.render()))?;
    if let Some(save) = &q.save_plan {
        super::init::write_new(save, &text, false)?;
        eprintln!("wrote {} (the plan of this run)", save.display());
    }
    Ok(plan)
}
