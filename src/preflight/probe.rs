//! One probe request of `perfplan check` and the rows its answers give: rejected fields
//! (retried without them), token-id prompts, usage at the end of a stream, cached tokens,
//! and images received.

use serde_json::{Map, Value};

use super::{advise, row, CheckRow, Verdict, CORE_KEYS};
use crate::api::ApiKind;
use crate::control::{self, explain};
use crate::engine::PreparedRequest;
use crate::planner::RunSpec;
use crate::record::excerpt;

/// Most fields dropped and retried after a 400 names one.
const MAX_RETRIES: usize = 6;

/// What a successful answer reported in `usage`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Seen {
    usage: bool,
    prompt: Option<u64>,
    completion: Option<u64>,
    cached: Option<u64>,
}

/// The usage object of one JSON message (chat/completions, or a Responses event).
fn usage_of(v: &Value) -> Option<Seen> {
    let u = v
        .get("usage")
        .filter(|u| u.is_object())
        .or_else(|| v.pointer("/response/usage").filter(|u| u.is_object()))?;
    let num = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| u.pointer(k).and_then(Value::as_u64))
    };
    Some(Seen {
        usage: true,
        prompt: num(&["/prompt_tokens", "/input_tokens"]),
        completion: num(&["/completion_tokens", "/output_tokens"]),
        cached: num(&[
            "/prompt_tokens_details/cached_tokens",
            "/input_tokens_details/cached_tokens",
        ]),
    })
}

/// The last usage of a response body: an SSE stream or one JSON document.
fn seen_in(body: &str, stream: bool) -> Seen {
    if !stream {
        return serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| usage_of(&v))
            .unwrap_or_default();
    }
    body.lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find_map(|v| usage_of(&v))
        .unwrap_or_default()
}

/// The body field a 400 answer names, among the fields the request sends.
fn named_field(error: &str, body: &Map<String, Value>) -> Option<String> {
    let parsed: Value = serde_json::from_str(error).unwrap_or(Value::Null);
    let param = parsed
        .pointer("/error/param")
        .or_else(|| parsed.get("param"))
        .and_then(Value::as_str);
    let candidates = body.keys().filter(|k| !CORE_KEYS.contains(&k.as_str()));
    for k in candidates {
        let word = |text: &str| {
            text.match_indices(k.as_str()).any(|(i, _)| {
                let before = text[..i].chars().next_back();
                let after = text[i + k.len()..].chars().next();
                let edge = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                edge(before) && edge(after)
            })
        };
        if param == Some(k.as_str()) || word(error) {
            return Some(k.clone());
        }
    }
    None
}

/// The message of an error body (every server family's shape), else an excerpt of it.
fn message(text: &str) -> String {
    crate::api::error_message(text.as_bytes()).unwrap_or_else(|| excerpt(text.as_bytes()))
}

/// Image parts removed from chat messages; `None` when there were none.
fn without_images(body: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut b = body.clone();
    let mut removed = false;
    for m in b.get_mut("messages")?.as_array_mut()? {
        if let Some(parts) = m.get_mut("content").and_then(Value::as_array_mut) {
            let before = parts.len();
            parts.retain(|p| p.get("type").and_then(Value::as_str) != Some("image_url"));
            removed |= parts.len() != before;
        }
    }
    removed.then_some(b)
}

async fn send(
    client: &control::Client,
    kind: ApiKind,
    body: &Map<String, Value>,
) -> Result<(u16, String), String> {
    let url = client.urls().api(kind).clone();
    let resp = client
        .request(reqwest::Method::POST, url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(Value::Object(body.clone()).to_string())
        .send()
        .await
        .map_err(|e| explain(&e))?;
    let status = resp.status().as_u16();
    let text = resp.text().await.map_err(|e| explain(&e))?;
    Ok((status, text))
}

/// Sends the probe; on a 400 that names a field of the body, drops the field (a row
/// advising `reject_fields`) and sends again, at most `MAX_RETRIES` times. `None` (with a
/// failed row) when the server could not be reached.
async fn send_dropping(
    (run, mode): (&RunSpec, &str),
    client: &control::Client,
    (req, body): (&PreparedRequest, &mut serde_json::Map<String, Value>),
    rows: &mut Vec<CheckRow>,
    rejected: &mut Vec<String>,
) -> Option<(u16, String)> {
    let r = |check: &str, v, d| row(run, mode, check, v, d);
    let ep = &run.settings.endpoint.name;
    loop {
        let (status, text) = match send(client, req.kind, body).await {
            Ok(a) => a,
            Err(e) => {
                rows.push(r(
                    "request",
                    Verdict::Fail,
                    format!("POST {}: {e}", client.urls().api(req.kind)),
                ));
                return None;
            }
        };
        if status == 400 && rejected.len() < MAX_RETRIES {
            if let Some(field) = named_field(&text, body) {
                body.remove(&field);
                rows.push(advise(
                    r(
                        "field accepted",
                        Verdict::Fail,
                        format!("`{field}`: HTTP 400 {}", message(&text)),
                    ),
                    format!("add \"{field}\" to reject_fields of endpoint `{ep}`"),
                ));
                rejected.push(field);
                continue;
            }
        }
        return Some((status, text));
    }
}

/// Sends the probe (dropping fields a 400 names) and checks what came back.
pub(super) async fn probe(
    run: &RunSpec,
    mode: &str,
    client: &control::Client,
    req: PreparedRequest,
) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    let r = |check: &str, v, d| row(run, mode, check, v, d);
    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(&req.body) else {
        return vec![r(
            "request",
            Verdict::Fail,
            "the request body is not a JSON object".into(),
        )];
    };
    let mut rejected = Vec::new();
    let Some((status, text)) = send_dropping(
        (run, mode),
        client,
        (&req, &mut body),
        &mut rows,
        &mut rejected,
    )
    .await
    else {
        return rows;
    };
    if !(200..300).contains(&status) {
        rows.push(refused(run, mode, client, &req, (status, &text)));
        return rows;
    }
    let sent: Vec<&String> = body
        .keys()
        .filter(|k| !CORE_KEYS.contains(&k.as_str()))
        .collect();
    if rejected.is_empty() {
        let list: Vec<&str> = sent.iter().map(|s| s.as_str()).collect();
        rows.push(r("fields accepted", Verdict::Pass, list.join(", ")));
    }
    if run.settings.tokenize_prompt {
        rows.push(r(
            "token-id prompt",
            Verdict::Pass,
            format!("HTTP {status}"),
        ));
    }
    let seen = seen_in(&text, req.stream);
    if matches!(req.kind, ApiKind::Embeddings | ApiKind::Rerank) {
        let v = if seen.prompt.is_some() {
            Verdict::Pass
        } else {
            Verdict::Warn
        };
        let detail = seen
            .prompt
            .map_or("no usage.prompt_tokens".to_string(), |p| {
                format!("prompt_tokens {p}")
            });
        rows.push(row(run, mode, "the body has usage", v, detail));
    } else {
        rows.extend(usage_rows(run, mode, req.stream, seen));
    }
    if let Some(plain) = without_images(&body) {
        rows.push(images_row(run, mode, client, &req, seen, &plain).await);
    }
    rows
}

/// The row of a probe the server refused (not a field it named): why, and what to try.
fn refused(
    run: &RunSpec,
    mode: &str,
    client: &control::Client,
    req: &PreparedRequest,
    (status, text): (u16, &str),
) -> CheckRow {
    let r = |check: &str, v, d| row(run, mode, check, v, d);
    let detail = format!("HTTP {status}: {}", message(text));
    if status == 404 {
        advise(
            r("request", Verdict::Fail, detail),
            format!(
                "check that {} is the server's route (base_url, or `paths.{}` of the endpoint) and that it serves `{}` (served_name of model `{}`)",
                client.urls().api(req.kind),
                req.kind.as_str(),
                run.served_model(),
                run.settings.model.name
            ),
        )
    } else if run.settings.tokenize_prompt {
        advise(
            r("token-id prompt", Verdict::Fail, detail),
            "this server does not take token-id prompts (some answer HTTP 500, not 400); use tokenize_prompt = false",
        )
    } else {
        r("request", Verdict::Fail, detail)
    }
}

fn usage_rows(run: &RunSpec, mode: &str, stream: bool, seen: Seen) -> Vec<CheckRow> {
    let r = |check: &str, v, d| row(run, mode, check, v, d);
    let what = if stream {
        "the stream ends with usage"
    } else {
        "the body has usage"
    };
    let (Some(p), Some(c)) = (seen.prompt, seen.completion) else {
        let detail = if seen.usage {
            "usage lacks prompt_tokens or completion_tokens".to_string()
        } else {
            "no usage".to_string()
        };
        // Not a failure: runs still work, with the client's counts flagged as estimates.
        return vec![advise(
            r(what, Verdict::Warn, detail),
            "token counts fall back to the client's tokenizer (flagged as estimated); the server \
             must send usage (stream_options.include_usage) for exact counts",
        )];
    };
    let mut rows = vec![r(
        what,
        Verdict::Pass,
        format!("prompt_tokens {p}, completion_tokens {c}"),
    )];
    rows.push(match seen.cached {
        Some(n) => r("cached_tokens", Verdict::Pass, format!("{n}")),
        None => advise(
            r(
                "cached_tokens",
                Verdict::Warn,
                "usage has no prompt_tokens_details.cached_tokens".into(),
            ),
            format!(
                "cache_hit_ratio will be unknown in this mode (vLLM sends cached_tokens when \
                 started with --enable-prompt-tokens-details, SGLang with --enable-cache-report); \
                 server_cache_hit_ratio comes from /metrics (set [endpoints.{}.metrics] if its \
                 counter names differ)",
                run.settings.endpoint.name
            ),
        ),
    });
    rows
}

async fn images_row(
    run: &RunSpec,
    mode: &str,
    client: &control::Client,
    req: &PreparedRequest,
    seen: Seen,
    plain: &Map<String, Value>,
) -> CheckRow {
    let r = |v, d| row(run, mode, "images received", v, d);
    let text_only = match send(client, req.kind, plain).await {
        Ok((200..=299, text)) => seen_in(&text, req.stream).prompt,
        _ => None,
    };
    match (seen.prompt, text_only) {
        (Some(with), Some(without)) if with > without => r(
            Verdict::Pass,
            format!("prompt_tokens {with} with images, {without} without"),
        ),
        (Some(with), Some(without)) => advise(
            r(Verdict::Fail, format!("prompt_tokens {with} with images, {without} without")),
            "the server ignored the images: check that the model is multimodal and the server takes image_url parts",
        ),
        _ => r(Verdict::Warn, "cannot compare prompt_tokens with and without images".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_field_a_400_names() {
        let body = json!({"model": "m", "seed": 1, "min_tokens": 2, "max_tokens": 3});
        let body = body.as_object().unwrap();
        let e = r#"{"error":{"message":"unsupported field `seed`","param":"seed"}}"#;
        assert_eq!(named_field(e, body).as_deref(), Some("seed"));
        assert_eq!(
            named_field("min_tokens is not supported", body).as_deref(),
            Some("min_tokens")
        );
        assert_eq!(named_field("bad max_tokens_x value", body), None);
        assert_eq!(named_field("model `m` not found", body), None);
    }

    #[test]
    fn usage_at_the_end_of_a_stream() {
        let stream = "data: {\"choices\":[]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n";
        let s = seen_in(stream, true);
        assert_eq!((s.prompt, s.completion, s.cached), (Some(5), Some(2), None));
        let responses = r#"{"type":"response.completed","response":{"usage":{"input_tokens":7,"output_tokens":1,"input_tokens_details":{"cached_tokens":0}}}}"#;
        let s = seen_in(&format!("data: {responses}\n"), true);
        assert_eq!((s.prompt, s.cached), (Some(7), Some(0)));
        assert!(!seen_in("data: {}\n", true).usage);
    }

    #[test]
    fn image_parts_are_removed() {
        let body = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": "data:"}}]}]});
        let plain = without_images(body.as_object().unwrap()).unwrap();
        assert_eq!(plain["messages"][0]["content"].as_array().unwrap().len(), 1);
        let text = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert!(without_images(text.as_object().unwrap()).is_none());
    }
}
