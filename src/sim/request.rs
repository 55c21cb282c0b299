//! Reading request bodies of the inference routes into a `Job`: prompts as token ids,
//! choices, length limits, streaming and usage options. Also the OpenAI-style error body.
//! Knows nothing about timing.

use serde_json::{json, Value};

use super::tokens::{marker, TokenCounter};
use super::{SimConfig, UsageMode};

/// Which API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Chat,
    Completions,
    Responses,
}

/// An inference request, read.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub api: Api,
    pub model: String,
    /// One token sequence per prompt; each prompt gets `n` choices.
    pub prompts: Vec<Vec<u32>>,
    pub n: u32,
    pub max_tokens: Option<u32>,
    pub min_tokens: u32,
    pub ignore_eos: bool,
    pub stream: bool,
    /// A usage chunk ends the stream.
    pub stream_usage: bool,
    /// Every chunk carries the running usage (`stream_options.continuous_usage_stats`
    /// with `include_usage`, as vLLM reads them).
    pub running_usage: bool,
    /// The tools a chat request offers (see `tools`).
    pub tools: Vec<super::tools::SimTool>,
    /// A golden question of a plan's `[checks]` the simulator can solve (see `golden`),
    /// looked for only under `golden_answers`.
    pub question: Option<super::golden::Question>,
}

impl Job {
    pub(crate) fn choices(&self) -> u32 {
        (self.prompts.len() as u32).max(1) * self.n
    }

    pub(crate) fn prompt_tokens(&self) -> u64 {
        self.prompts.iter().map(|p| p.len() as u64).sum()
    }
}

/// An error answer: status and OpenAI-style body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<String>,
}

impl ApiError {
    pub(crate) fn bad_request(message: impl Into<String>, param: Option<&str>) -> Self {
        ApiError {
            status: 400,
            message: message.into(),
            kind: "invalid_request_error",
            param: param.map(str::to_string),
        }
    }

    pub(crate) fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.status,
        }})
    }
}

/// Checks the model name and rejected fields.
pub(crate) fn check_common(cfg: &SimConfig, body: &Value) -> Result<(), ApiError> {
    let Some(obj) = body.as_object() else {
        return Err(ApiError::bad_request(
            "request body must be a JSON object",
            None,
        ));
    };
    if let Some(field) = cfg
        .reject_fields
        .iter()
        .find(|f| obj.contains_key(f.as_str()))
    {
        return Err(ApiError::bad_request(
            format!("unsupported field `{field}` (this server rejects it)"),
            Some(field),
        ));
    }
    let model = obj.get("model").and_then(Value::as_str).unwrap_or("");
    if !cfg.models.is_empty() && !cfg.models.iter().any(|m| m == model) {
        return Err(ApiError {
            status: 404,
            message: format!("the model `{model}` does not exist"),
            kind: "NotFoundError",
            param: Some("model".to_string()),
        });
    }
    Ok(())
}

fn uint(body: &Value, key: &str) -> Result<Option<u32>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(|n| Some(n.min(u64::from(u32::MAX)) as u32))
            .ok_or_else(|| {
                ApiError::bad_request(format!("`{key}` must be a non-negative integer"), Some(key))
            }),
    }
}

/// Reads an inference request.
pub(crate) fn parse_job(
    api: Api,
    cfg: &SimConfig,
    body: &Value,
    tok: &TokenCounter,
) -> Result<Job, ApiError> {
    check_common(cfg, body)?;
    let history = match api {
        Api::Chat => body.get("messages"),
        Api::Responses => body.get("input"),
        Api::Completions => None,
    };
    if let Some(Value::Array(items)) = history {
        super::tools::check_tool_messages(items)?;
    }
    let prompts = match api {
        Api::Chat => vec![chat_tokens(
            body.get("messages"),
            None,
            tok,
            cfg.image_tokens,
            body.get("tools"),
        )?],
        Api::Completions => completion_prompts(body.get("prompt"), tok)?,
        Api::Responses => vec![response_tokens(body, tok, cfg.image_tokens)?],
    };
    // Each route honours only the fields its real counterpart reads (vLLM, OpenAI):
    // chat takes `max_completion_tokens` (or the older `max_tokens`), completions only
    // `max_tokens`, responses only `max_output_tokens` and neither `n` nor `min_tokens`.
    let max_tokens = match api {
        Api::Responses => uint(body, "max_output_tokens")?,
        Api::Chat => uint(body, "max_completion_tokens")?.or(uint(body, "max_tokens")?),
        Api::Completions => uint(body, "max_tokens")?,
    };
    let (n, min_tokens) = match api {
        Api::Responses => (1, 0),
        _ => (
            uint(body, "n")?.unwrap_or(1).clamp(1, 128),
            uint(body, "min_tokens")?.unwrap_or(0),
        ),
    };
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let asked = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let stream_usage = match cfg.usage {
        UsageMode::Request => asked || api == Api::Responses,
        UsageMode::Always => true,
        UsageMode::Never => false,
    };
    let continuous = body
        .pointer("/stream_options/continuous_usage_stats")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let running_usage = stream && asked && continuous && cfg.usage != UsageMode::Never;
    let tools = super::tools::offered_by(api, body);
    let question = super::golden::question_of(cfg, body, &tools);
    Ok(Job {
        api,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("sim-model")
            .to_string(),
        prompts,
        n,
        max_tokens,
        min_tokens,
        ignore_eos: body
            .get("ignore_eos")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        stream,
        stream_usage,
        running_usage: running_usage && api != Api::Responses,
        tools,
        question,
    })
}

fn completion_prompts(
    prompt: Option<&Value>,
    tok: &TokenCounter,
) -> Result<Vec<Vec<u32>>, ApiError> {
    let bad = || {
        ApiError::bad_request(
            "`prompt` must be a string, a list of strings, a list of token ids or a list of lists of token ids",
            Some("prompt"),
        )
    };
    let ids = |v: &Vec<Value>| -> Option<Vec<u32>> {
        v.iter()
            .map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()))
            .collect()
    };
    match prompt {
        Some(Value::String(s)) => {
            let mut out = Vec::new();
            tok.encode_prompt(s, &mut out);
            Ok(vec![out])
        }
        Some(Value::Array(items)) if items.is_empty() => Err(bad()),
        Some(Value::Array(items)) if items[0].is_number() => Ok(vec![ids(items).ok_or_else(bad)?]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => {
                    let mut out = Vec::new();
                    tok.encode(s, &mut out);
                    Ok(out)
                }
                Value::Array(v) => ids(v).ok_or_else(bad),
                _ => Err(bad()),
            })
            .collect(),
        _ => Err(bad()),
    }
}

/// Appends the tokens of a message content: a string or a list of parts.
/// An `image_url` part counts `image_tokens` tokens, distinct per image.
fn content_tokens(
    content: Option<&Value>,
    tok: &TokenCounter,
    image_tokens: u32,
    out: &mut Vec<u32>,
) {
    match content {
        Some(Value::String(s)) => tok.encode(s, out),
        Some(Value::Array(parts)) => {
            for part in parts {
                let image = part.pointer("/image_url/url").and_then(Value::as_str);
                match (part.get("text").and_then(Value::as_str), image) {
                    (Some(text), _) => tok.encode(text, out),
                    (None, Some(url)) => {
                        let h = marker(url);
                        out.extend((0..image_tokens).map(|k| h.wrapping_add(k) | 0x8000_0000));
                    }
                    (None, None) => out.push(marker(&part.to_string())),
                }
            }
        }
        _ => {}
    }
}

/// Chat messages as `[role] content [end]` per message, then a reply marker.
fn chat_tokens(
    messages: Option<&Value>,
    system: Option<&str>,
    tok: &TokenCounter,
    image_tokens: u32,
    tools: Option<&Value>,
) -> Result<Vec<u32>, ApiError> {
    let Some(Value::Array(messages)) = messages else {
        return Err(ApiError::bad_request(
            "`messages` must be a list of messages",
            Some("messages"),
        ));
    };
    if system.is_none() {
        if let Some(ids) = tok.chat(messages, tools) {
            return Ok(ids);
        }
    }
    let mut out = Vec::new();
    if let Some(s) = system {
        out.push(marker("system"));
        tok.encode(s, &mut out);
        out.push(marker("end"));
    }
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        out.push(marker(role));
        content_tokens(m.get("content"), tok, image_tokens, &mut out);
        // Responses' function-call items and their results.
        for key in ["name", "arguments", "output"] {
            if let Some(text) = m.get(key).and_then(Value::as_str) {
                tok.encode(text, &mut out);
            }
        }
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for key in ["name", "arguments"] {
                if let Some(text) = call
                    .pointer(&format!("/function/{key}"))
                    .and_then(Value::as_str)
                {
                    tok.encode(text, &mut out);
                }
            }
        }
        out.push(marker("end"));
    }
    out.push(marker("assistant"));
    Ok(out)
}

/// Responses API `input` (a string or a list of message items) plus `instructions`.
fn response_tokens(
    body: &Value,
    tok: &TokenCounter,
    image_tokens: u32,
) -> Result<Vec<u32>, ApiError> {
    let system = body.get("instructions").and_then(Value::as_str);
    match body.get("input") {
        Some(Value::String(s)) => {
            let msgs = json!([{"role": "user", "content": s}]);
            chat_tokens(Some(&msgs), system, tok, image_tokens, None)
        }
        Some(v @ Value::Array(_)) => chat_tokens(Some(v), system, tok, image_tokens, None),
        _ => Err(ApiError::bad_request(
            "`input` must be a string or a list of items",
            Some("input"),
        )),
    }
}

/// Reads a list of texts or token-id lists (embeddings `input`, rerank documents).
pub(crate) fn texts_tokens(v: Option<&Value>, tok: &TokenCounter) -> Vec<Vec<u32>> {
    match v {
        Some(Value::String(s)) => {
            let mut out = Vec::new();
            tok.encode(s, &mut out);
            vec![out]
        }
        Some(Value::Array(items)) if items.first().is_some_and(Value::is_number) => {
            vec![items
                .iter()
                .filter_map(|x| x.as_u64().map(|n| n as u32))
                .collect()]
        }
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                let mut out = Vec::new();
                match item {
                    Value::String(s) => tok.encode(s, &mut out),
                    Value::Array(ids) => {
                        out.extend(ids.iter().filter_map(|x| x.as_u64().map(|n| n as u32)))
                    }
                    Value::Object(_) => content_tokens(item.get("text"), tok, 1, &mut out),
                    _ => {}
                }
                out
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(api: Api, body: Value) -> Result<Job, ApiError> {
        let tok = TokenCounter::load(None).unwrap();
        parse_job(api, &SimConfig::default(), &body, &tok)
    }

    #[test]
    fn completion_prompt_forms() {
        let lens = |p: Value| {
            job(Api::Completions, json!({"model": "m", "prompt": p}))
                .map(|j| j.prompts.iter().map(Vec::len).collect::<Vec<_>>())
        };
        assert_eq!(lens(json!("a b c")).unwrap(), vec![3]);
        assert_eq!(lens(json!([5, 6, 7, 8])).unwrap(), vec![4]);
        assert_eq!(lens(json!(["a", "b c"])).unwrap(), vec![1, 2]);
        assert_eq!(lens(json!([[1, 2], [3]])).unwrap(), vec![2, 1]);
        assert_eq!(lens(json!([])).unwrap_err().status, 400);
        assert_eq!(
            lens(json!({"x": 1})).unwrap_err().param.as_deref(),
            Some("prompt")
        );
    }

    #[test]
    fn lengths_and_usage_options() {
        let j = job(
            Api::Chat,
            json!({"model": "m", "messages": [], "max_tokens": 9,
            "max_completion_tokens": 7, "stream": true, "stream_options": {"include_usage": true}}),
        )
        .unwrap();
        assert_eq!(j.max_tokens, Some(7));
        assert!(j.stream && j.stream_usage);
        assert_eq!(j.prompt_tokens(), 1);
        let r = job(
            Api::Responses,
            json!({"model": "m", "input": "hi", "instructions": "be brief",
            "max_output_tokens": 3}),
        )
        .unwrap();
        assert_eq!(r.max_tokens, Some(3));
        // system marker + 2 + end, user marker + 1 + end, reply marker
        assert_eq!(r.prompt_tokens(), 8);
        assert!(job(Api::Chat, json!({"model": "m"})).is_err());
        assert_eq!(
            job(Api::Chat, json!({"model": "m", "messages": [], "n": "x"}))
                .unwrap_err()
                .status,
            400
        );
    }

    /// A limit under another route's name is not honoured (as by vLLM and OpenAI).
    #[test]
    fn each_route_reads_only_its_own_limit() {
        let r = job(
            Api::Responses,
            json!({"model": "m", "input": "hi", "max_tokens": 3, "max_completion_tokens": 3,
            "min_tokens": 5, "n": 2}),
        )
        .unwrap();
        assert_eq!((r.max_tokens, r.min_tokens, r.n), (None, 0, 1));
        let c = job(
            Api::Completions,
            json!({"model": "m", "prompt": "hi", "max_completion_tokens": 3, "max_output_tokens": 3}),
        )
        .unwrap();
        assert_eq!(c.max_tokens, None);
        let chat = job(
            Api::Chat,
            json!({"model": "m", "messages": [], "max_output_tokens": 3}),
        )
        .unwrap();
        assert_eq!(chat.max_tokens, None);
    }
}
