//! One `evalscope perf` command line → one group of runs: its endpoint, model, dataset,
//! request settings and load tiers, as plan tables, with a note for every parameter that
//! has no plan equivalent and for every place perfplan behaves differently.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::args::Parsed;
use super::params::{self, Mapping};
use super::url::{paths_key, split};
use super::{datasets, loads, ImportError};
use crate::plan::ApiSpec;

/// The runs of one command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub endpoint_name: String,
    pub endpoint: Map<String, Value>,
    pub model_name: String,
    pub model: Map<String, Value>,
    pub dataset_name: String,
    pub dataset: Map<String, Value>,
    /// `[defaults]`: the request settings.
    pub request: Map<String, Value>,
    /// The `load` axis values.
    pub loads: Vec<Value>,
    pub tokenize_prompt: bool,
    pub name: Option<String>,
    pub seed: Option<u64>,
    pub pause: Option<String>,
    pub notes: Vec<String>,
}

/// Seconds as a plan duration (`600s`, `6h`).
pub(super) fn seconds(flag: &str, p: &Parsed) -> Result<Option<String>, ImportError> {
    let Some(s) = p.num::<f64>(flag)? else {
        return Ok(None);
    };
    if !s.is_finite() || s < 0.0 {
        return Err(ImportError::Value {
            flag: flag.into(),
            value: s.to_string(),
            expected: "seconds (0 or more)",
        });
    }
    Ok(Some(crate::units::format_duration(
        Duration::from_secs_f64(s),
    )))
}

/// A name usable as a table key and an output folder.
pub fn slug(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c| c == '-' || c == '.').to_string();
    if s.is_empty() {
        "model".into()
    } else {
        s
    }
}

/// The value of a string written into a plan: literal, never expanded.
pub(super) fn lit(text: &str) -> Value {
    Value::from(text.replace("${", "$${"))
}

fn no_equivalent_notes(p: &Parsed) -> Vec<String> {
    p.flags()
        .filter_map(|flag| match params::find(flag).map(|x| x.mapping) {
            Some(Mapping::None(why)) => Some(format!("`{flag}`: no equivalent, because {why}")),
            _ => None,
        })
        .collect()
}

/// Whether the command replays a trace, whose records keep their own `model`.
fn replays_trace(p: &Parsed) -> bool {
    p.one("--dataset") == Some("workload_trace")
}

/// The command's `--model`: required, except by a trace replay (EvalScope makes it
/// optional there: every record keeps its own model, and the runs are named after the
/// dataset).
fn model_of<'p>(p: &'p Parsed, notes: &mut Vec<String>) -> Result<Option<&'p str>, ImportError> {
    match p.one("--model") {
        Some(m) => Ok(Some(m)),
        None if replays_trace(p) => {
            notes.push("`--model` not given: every trace record keeps its own `model`, as EvalScope replays it (`model_override` / `model_mapping` rewrite it); the plan's model only names the runs".into());
            Ok(None)
        }
        None => Err(ImportError::MissingValue {
            flag: "--model".into(),
        }),
    }
}

/// Converts one command line (the arguments after `perf`).
pub fn convert_command(p: &Parsed) -> Result<Group, ImportError> {
    let mut notes = no_equivalent_notes(p);
    let model = model_of(p, &mut notes)?;
    let model_name = match model {
        Some(model) => slug(model.rsplit('/').next().unwrap_or(model)),
        None => "trace".to_string(),
    };
    let (endpoint_name, endpoint, api) = endpoint(p, model.unwrap_or("MODEL"), &mut notes)?;
    let tokenize_prompt = p.flag("--tokenize-prompt").unwrap_or(false);
    let mut model_table = Map::new();
    if let Some(model) = model {
        model_table.insert("served_name".into(), lit(model));
    }
    if let Some(t) = p.one("--tokenizer-path") {
        model_table.insert("tokenizer".into(), lit(t));
    }
    if let Some(on) = p.flag("--apply-chat-template") {
        model_table.insert(
            "chat_template".into(),
            (if on { "on" } else { "off" }).into(),
        );
    }
    let mut request = request(p, &mut notes)?;
    let (dataset_name, dataset) = datasets::dataset(p, api, &mut request, &mut notes)?;
    if let Some(t) = p.one("--query-template") {
        request.insert("body_template".into(), lit(&body_template(t, api)?));
    }
    let loads = loads::loads(p, &mut notes)?;
    Ok(Group {
        endpoint_name,
        endpoint,
        model_name,
        model: model_table,
        dataset_name,
        dataset,
        request,
        loads,
        tokenize_prompt,
        name: p.one("--name").map(slug),
        seed: p.num::<u64>("--seed")?,
        pause: seconds("--sleep-interval", p)?,
        notes,
    })
}

fn endpoint(
    p: &Parsed,
    model: &str,
    notes: &mut Vec<String>,
) -> Result<(String, Map<String, Value>, ApiSpec), ImportError> {
    let mut ep = Map::new();
    let api_arg = p.one("--api").unwrap_or("openai");
    let kind = match api_arg {
        "openai" | "local" | "local_vllm" | "default" => None,
        "openai_responses" | "openai_response" | "responses" => Some(ApiSpec::Responses),
        "openai_embedding" | "embedding" => Some(ApiSpec::Embeddings),
        "openai_rerank" | "rerank" => Some(ApiSpec::Rerank),
        other => {
            return Err(ImportError::Unsupported {
                flag: "--api".into(),
                value: other.into(),
                why: "a custom API plugin is Python code; perfplan speaks chat, completions, \
                      responses, embeddings and rerank (use `body_template` for other bodies)"
                    .into(),
            })
        }
    };
    let mut name = "server".to_string();
    let api = if api_arg == "local_vllm" || api_arg == "local" {
        let port = p.one("--port").unwrap_or("{port}");
        ep.insert("base_url".into(), format!("http://127.0.0.1:{port}").into());
        ep.insert(
            "launch".into(),
            lit(&format!("vllm serve {model} --port {port}")),
        );
        ep.insert("ready_timeout".into(), "10m".into());
        name = "vllm".into();
        notes.push(match api_arg {
            "local" => "`--api local`: EvalScope runs the model in its own process with transformers; perfplan benchmarks a server, so the plan launches `vllm serve` before the runs and stops it after (the numbers are vLLM's, not transformers'); check the command, or give `launch` another server's",
            _ => "`--api local_vllm`: perfplan launches `vllm serve` itself before the runs and stops it after; check the command",
        }.into());
        ApiSpec::Chat
    } else {
        remote(p, kind, &mut ep)
    };
    if api != ApiSpec::Chat && !p.flag("--tokenize-prompt").unwrap_or(false) {
        ep.insert("api".into(), serde_json::to_value(api).unwrap_or_default());
    }
    if p.has("--api-key") {
        ep.insert("api_key_env".into(), "API_KEY".into());
        notes.push("`--api-key`: the plan reads the key from $API_KEY (a plan never holds a key): export it before `perfplan run`".into());
    }
    headers(p, &mut ep, notes)?;
    let mut timeouts = Map::new();
    for (flag, key) in [
        ("--connect-timeout", "connect"),
        ("--read-timeout", "read"),
        ("--total-timeout", "total"),
    ] {
        if let Some(d) = seconds(flag, p)? {
            timeouts.insert(key.into(), d.into());
        }
    }
    if !timeouts.is_empty() {
        ep.insert("timeouts".into(), Value::Object(timeouts));
    }
    if p.flag("--no-test-connection") == Some(true) {
        ep.insert("connection_test".into(), false.into());
    }
    Ok((name, ep, api))
}

/// A server given by `--url` (EvalScope's default when there is none): its `base_url`,
/// and `paths` when the route is not the usual one. Returns the API.
fn remote(p: &Parsed, kind: Option<ApiSpec>, ep: &mut Map<String, Value>) -> ApiSpec {
    let url = p
        .one("--url")
        .unwrap_or("http://127.0.0.1:8877/v1/chat/completions");
    let parts = split(url);
    ep.insert("base_url".into(), lit(&parts.base_url));
    let api = kind.or(parts.api).unwrap_or(ApiSpec::Chat);
    if let Some(path) = parts.path_override.filter(|_| parts.api == Some(api)) {
        ep.insert("paths".into(), json!({ paths_key(api): path }));
    }
    api
}

fn headers(
    p: &Parsed,
    ep: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    let mut out = Map::new();
    for kv in p.list("--headers") {
        let (k, v) = kv.split_once('=').ok_or_else(|| ImportError::Value {
            flag: "--headers".into(),
            value: kv.clone(),
            expected: "KEY=VALUE pairs",
        })?;
        let k = k.trim();
        if crate::secrets::is_secret_header(k) {
            let var = format!(
                "PERFPLAN_HEADER_{}",
                k.to_ascii_uppercase()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            );
            notes.push(format!("header `{k}` looks secret: the plan reads it from ${var}; export it before `perfplan run`"));
            out.insert(k.into(), format!("${{{var}}}").into());
        } else {
            out.insert(k.into(), lit(v.trim()));
        }
    }
    if !out.is_empty() {
        ep.insert("headers".into(), Value::Object(out));
    }
    Ok(())
}

fn request(p: &Parsed, notes: &mut Vec<String>) -> Result<Map<String, Value>, ImportError> {
    let mut r = Map::new();
    let max = p.nums::<u32>("--max-tokens")?;
    let output = match max.as_slice() {
        [] => json!(2048),
        [n] => json!(n),
        [a, b] if a <= b => json!({"min": a, "max": b}),
        _ => {
            return Err(ImportError::Value {
                flag: "--max-tokens".into(),
                value: p.list("--max-tokens").join(" "),
                expected: "one value, or two (min max)",
            })
        }
    };
    r.insert("output_tokens".into(), output);
    if let Some(v) = p.num::<u32>("--min-tokens")? {
        r.insert("min_tokens".into(), v.into());
    }
    let temperature = p.num::<f64>("--temperature")?.unwrap_or(0.0);
    r.insert("temperature".into(), json!(temperature));
    for (flag, key) in [
        ("--top-p", "top_p"),
        ("--frequency-penalty", "frequency_penalty"),
        ("--repetition-penalty", "repetition_penalty"),
    ] {
        if let Some(v) = p.num::<f64>(flag)? {
            r.insert(key.into(), json!(v));
        }
    }
    if let Some(v) = p.num::<i64>("--top-k")? {
        r.insert("top_k".into(), v.into());
    }
    if let Some(v) = p.num::<u32>("--n-choices")? {
        r.insert("n".into(), v.into());
    }
    if p.flag("--logprobs") == Some(true) {
        r.insert("logprobs".into(), true.into());
    }
    if let Some(v) = p.num::<i64>("--seed")? {
        r.insert("seed".into(), v.into());
    }
    match p.list("--stop") {
        [] => {}
        [one] => {
            r.insert("stop".into(), lit(one));
        }
        many => {
            r.insert("stop".into(), many.iter().map(|s| lit(s)).collect());
        }
    }
    if p.has("--stop-token-ids") {
        r.insert(
            "stop_token_ids".into(),
            p.nums::<u32>("--stop-token-ids")?.into(),
        );
    }
    if let Some(s) = p.flag("--stream") {
        r.insert("stream".into(), s.into());
    }
    if let Some(text) = p.one("--extra-args") {
        let extra: Value = serde_json::from_str(text).map_err(|source| ImportError::Json {
            flag: "--extra-args".into(),
            source,
        })?;
        let Value::Object(extra) = extra else {
            return Err(ImportError::Value {
                flag: "--extra-args".into(),
                value: text.into(),
                expected: "a JSON object",
            });
        };
        datasets::split_extra(extra, &mut r, notes);
    }
    Ok(r)
}

/// EvalScope's `--query-template` as a `body_template`: the template's JSON with the
/// model and the request's messages (or prompt) put in, and the request fields and
/// `stream` added over it, as EvalScope composes them.
fn body_template(text: &str, api: ApiSpec) -> Result<String, ImportError> {
    let source = match text.strip_prefix('@') {
        Some(path) => crate::text::read(Path::new(path)).map_err(|source| ImportError::Read {
            flag: "--query-template".into(),
            path: path.into(),
            source,
        })?,
        None => text.to_string(),
    };
    let Value::Object(tmpl) =
        serde_json::from_str(&source).map_err(|source| ImportError::Json {
            flag: "--query-template".into(),
            source,
        })?
    else {
        return Err(ImportError::Value {
            flag: "--query-template".into(),
            value: text.into(),
            expected: "a JSON object",
        });
    };
    let mut parts = vec!["\"model\": {{ model | tojson }}".to_string()];
    let input = if api == ApiSpec::Completions {
        "prompt"
    } else {
        "messages"
    };
    parts.push(format!("\"{input}\": {{{{ {input} | tojson }}}}"));
    for (k, v) in &tmpl {
        if k == "model" || k == input || k == "stream" || k == "stream_options" {
            continue;
        }
        let json = serde_json::to_string(v).unwrap_or_default();
        let json = json
            .replace("%m", "{{ (model | tojson)[1:-1] }}")
            .replace("%p", "{{ (prompt | tojson)[1:-1] }}");
        parts.push(format!(
            "{{% if {key} not in fields %}}{name}: {json}, {{% endif %}}",
            key = serde_json::to_string(k).unwrap_or_default(),
            name = serde_json::to_string(k).unwrap_or_default(),
        ));
    }
    let head = parts[..2].join(", ");
    let optional: String = parts[2..].concat();
    Ok(format!(
        "{{ {head}, {optional}{{% for k, v in fields | items %}}{{{{ k | tojson }}}}: {{{{ v | tojson }}}}, {{% endfor %}}\"stream\": {{{{ stream | tojson }}}}{{% if stream %}}, \"stream_options\": {{\"include_usage\": true}}{{% endif %}} }}\n"
    ))
}
