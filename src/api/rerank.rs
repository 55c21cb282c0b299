//! `/v1/rerank`: the request body (`query`, `documents`) and the body parser (usage only).

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::UsageWire;
use super::{base_body, prompt_name, ApiError, BodyInfo, BodyInput, Prompt};

pub(crate) fn body(input: &BodyInput<'_>) -> Result<Map<String, Value>, ApiError> {
    let parts = match input.prompt {
        Prompt::Rerank { query, documents } => Some((query.clone(), documents.clone())),
        Prompt::Body(_) => None,
        other => {
            return Err(ApiError::PromptMismatch {
                api: "rerank",
                prompt: prompt_name(other),
            })
        }
    };
    Ok(base_body(input, |b| {
        if let Some((query, documents)) = parts {
            b.insert("query".into(), Value::from(query));
            b.insert("documents".into(), Value::from(documents));
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
    fn total_tokens_is_the_input_count() {
        let b = parse_body(br#"{"id":"r","results":[{"index":0,"relevance_score":0.9}],"usage":{"total_tokens":42}}"#).unwrap();
        assert_eq!(b.usage.unwrap().prompt_tokens, Some(42));
    }
}
