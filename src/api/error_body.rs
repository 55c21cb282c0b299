//! The message of an error body or error event, in the shapes servers send them:
//!
//! - OpenAI, vLLM (current), llama.cpp: `{"error": {"message", "type", "code", "param"}}`
//! - vLLM (older), SGLang, xLLM: `{"object": "error", "message", "type", "code"}`
//! - TGI: `{"error": "text", "error_type": "validation"}`
//! - the Responses API: `{"type": "error", "message", "code"}` events and
//!   `response.failed` with `response.error.message`
//! - FastAPI validation errors: `{"detail": "text"}` or `{"detail": [{"loc", "msg"}]}`
//!
//! This is the failure path, read once per failed response: plain `serde_json::Value`.

use serde_json::Value;

/// `"message (type, code 400)"` for an error payload of a known shape; `None` when `data`
/// is not JSON or holds no message.
pub fn error_message(data: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(data.trim_ascii()).ok()?;
    let obj = v.as_object()?;
    let nested = obj.get("error").filter(|e| e.is_object()).or_else(|| {
        obj.get("response")
            .and_then(|r| r.get("error"))
            .filter(|e| e.is_object())
    });
    let (message, kind, code) = match (nested, obj.get("error")) {
        (Some(e), _) => (text(e.get("message")), e.get("type"), e.get("code")),
        (None, Some(Value::String(s))) => (Some(s.clone()), obj.get("error_type"), None),
        _ => match obj.get("detail") {
            Some(d) => (detail(d), None, None),
            None => (
                text(obj.get("message")),
                obj.get("type").filter(|t| t.as_str() != Some("error")),
                obj.get("code"),
            ),
        },
    };
    let message = message.filter(|m| !m.trim().is_empty())?;
    let extra: Vec<String> = [scalar(kind), scalar(code).map(|c| format!("code {c}"))]
        .into_iter()
        .flatten()
        .collect();
    Some(match extra.is_empty() {
        true => message,
        false => format!("{message} ({})", extra.join(", ")),
    })
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// A string or number, as text; `None` for null, empty text or anything else.
fn scalar(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// FastAPI's `detail`: a text, or a list of `{"loc": [...], "msg": "..."}`.
fn detail(d: &Value) -> Option<String> {
    match d {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .filter_map(|item| {
                    let msg = item.get("msg")?.as_str()?;
                    let loc: Vec<String> = item
                        .get("loc")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_string))
                        .collect();
                    Some(match loc.is_empty() {
                        true => msg.to_string(),
                        false => format!("{}: {msg}", loc.join(".")),
                    })
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(body: &str) -> Option<String> {
        error_message(body.as_bytes())
    }

    #[test]
    fn every_server_family() {
        assert_eq!(
            msg(r#"{"error":{"message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}}"#).as_deref(),
            Some("The model `x` does not exist. (NotFoundError, code 404)")
        );
        assert_eq!(
            msg(r#"{"object":"error","message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}"#).as_deref(),
            Some("max_tokens is too large (BadRequestError, code 400)")
        );
        assert_eq!(
            msg(r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096","error_type":"validation"}"#).as_deref(),
            Some("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096 (validation)")
        );
        assert_eq!(
            msg(r#"{"error":{"code":500,"message":"context shift is disabled","type":"server_error"}}"#).as_deref(),
            Some("context shift is disabled (server_error, code 500)")
        );
    }

    #[test]
    fn responses_api_and_fastapi_shapes() {
        assert_eq!(
            msg(r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":3}"#).as_deref(),
            Some("slow down (code rate_limit_exceeded)")
        );
        assert_eq!(
            msg(r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}}"#).as_deref(),
            Some("engine died (code server_error)")
        );
        assert_eq!(
            msg(r#"{"detail":[{"loc":["body","messages",0],"msg":"field required","type":"missing"}]}"#).as_deref(),
            Some("body.messages.0: field required")
        );
        assert_eq!(
            msg(r#"{"detail":"Not Found"}"#).as_deref(),
            Some("Not Found")
        );
    }

    #[test]
    fn not_an_error_payload() {
        assert_eq!(msg("<html>bad gateway</html>"), None);
        assert_eq!(msg(r#"{"error":{"message":""}}"#), None);
        assert_eq!(msg(r#"{"choices":[]}"#), None);
        assert_eq!(msg(r#"[1]"#), None);
    }
}
