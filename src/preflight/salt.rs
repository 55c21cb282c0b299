//! perfplan's own probes never warm what a cold run will measure: a `check` probe is the
//! run's first request with a unique salt put at the very start of its prompt (the first
//! message's text, a prompt string, or token ids of the salt before a token-id prompt),
//! so that no block of it past the chat template's fixed opening matches a prompt the run
//! will send. A prefix cache hashes blocks from the start, so one differing token at the
//! start makes every later block differ. Embeddings and rerank carry no KV cache: kept.

use serde_json::{Map, Value};

use crate::tokenize::Tokenizer;

/// A salt unique to this process and moment: `[perfplan probe 5f3a…] `.
pub fn fresh() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed = crate::hash::mix64(nanos ^ u64::from(std::process::id()).rotate_left(32));
    format!("[perfplan probe {mixed:016x}] ")
}

fn salt_text(value: &mut Value, salt: &str) -> bool {
    match value {
        Value::String(s) => {
            s.insert_str(0, salt);
            true
        }
        // Content parts: a text part first.
        Value::Array(parts) if parts.iter().all(Value::is_object) => {
            let part = serde_json::json!({"type": "text", "text": salt});
            parts.insert(0, part);
            true
        }
        _ => false,
    }
}

/// Salts a list of messages: the first one's content.
fn salt_messages(messages: &mut [Value], salt: &str) -> bool {
    messages
        .first_mut()
        .and_then(|m| m.get_mut("content"))
        .is_some_and(|c| salt_text(c, salt))
}

/// Salts a `prompt` (text, token ids, or a batch of either).
fn salt_prompt(prompt: &mut Value, salt: &str, ids: &[u32]) -> bool {
    match prompt {
        Value::String(_) => salt_text(prompt, salt),
        Value::Array(items) if items.iter().all(Value::is_u64) => {
            let head = ids.iter().map(|&i| Value::from(i));
            let tail = std::mem::take(items);
            *items = head.chain(tail).collect();
            !ids.is_empty()
        }
        Value::Array(items) => items
            .iter_mut()
            .map(|p| salt_prompt(p, salt, ids))
            .fold(false, |a, b| a | b),
        _ => false,
    }
}

fn salt_body(body: &mut Map<String, Value>, salt: &str, ids: &[u32]) -> bool {
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        return salt_messages(messages, salt);
    }
    if let Some(prompt) = body.get_mut("prompt") {
        return salt_prompt(prompt, salt, ids);
    }
    match body.get_mut("input") {
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => {
            salt_messages(items, salt)
        }
        Some(input @ Value::String(_)) => salt_text(input, salt),
        _ => false,
    }
}

/// The request body with `salt` at the start of its prompt; `None` when the body has no
/// prompt a prefix cache keeps (embeddings, rerank) or is not JSON.
pub(crate) fn salted(body: &[u8], salt: &str, tokenizer: Option<&Tokenizer>) -> Option<Vec<u8>> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let ids = tokenizer
        .and_then(|t| t.encode(salt, false).ok())
        .unwrap_or_default();
    let map = value.as_object_mut()?;
    if !salt_body(map, salt, &ids) {
        return None;
    }
    serde_json::to_vec(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn salt(body: Value, ids: &[u32]) -> Value {
        let mut v = body;
        let map = v.as_object_mut().unwrap_or_else(|| panic!());
        assert!(salt_body(map, "[s] ", ids));
        v
    }

    #[test]
    fn the_salt_goes_first_in_every_prompt_shape() {
        let chat = salt(
            json!({"messages": [{"role": "system", "content": "shared"}]}),
            &[],
        );
        assert_eq!(chat["messages"][0]["content"], "[s] shared");
        let parts = salt(
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}),
            &[],
        );
        assert_eq!(parts["messages"][0]["content"][0]["text"], "[s] ");
        let ids = salt(json!({"prompt": [5, 6, 7]}), &[1, 2]);
        assert_eq!(ids["prompt"], json!([1, 2, 5, 6, 7]));
        let batch = salt(json!({"prompt": ["a", "b"]}), &[]);
        assert_eq!(batch["prompt"], json!(["[s] a", "[s] b"]));
        let input = salt(json!({"input": "hello"}), &[]);
        assert_eq!(input["input"], "[s] hello");
        assert!(salted(br#"{"input": [1.0]}"#, "[s] ", None).is_none());
        assert_ne!(fresh(), "");
    }
}
