//! `/v1/embeddings`: the request body (`input` array) and the body parser (usage only;
//! the vectors are skipped without being stored).

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::UsageWire;
use super::{base_body, prompt_name, ApiError, BodyInfo, BodyInput, Prompt};

pub(crate) fn body(input: &BodyInput<'_>) -> Result<Map<String, Value>, ApiError> {
    let value = match input.prompt {
        Prompt::Embedding(inputs) => Some(Value::from(inputs.clone())),
        Prompt::Text(text) => Some(Value::from(vec![text.clone()])),
        Prompt::Body(_) => None,
        other => {
            return Err(ApiError::PromptMismatch {
                api: "embeddings",
                prompt: prompt_name(other),
            })
        }
    };
    Ok(base_body(input, |b| {
        if let Some(v) = value {
            b.insert("input".into(), v);
        }
    }))
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

pub(crate) fn parse_body(data: &[u8]) -> Result<BodyInfo, serde_json::Error> {
    let body: Body = serde_json::from_slice(data)?;
    Ok(BodyInfo {
        tool_calls: Vec::new(),
        usage: body.usage.as_ref().map(UsageWire::to_input_usage),
        error: body.error.is_some(),
        ..BodyInfo::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_from_body() {
        let b = parse_body(br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}"#).unwrap();
        assert_eq!(b.usage.unwrap().prompt_tokens, Some(7));
        assert!(!b.error);
    }
}
