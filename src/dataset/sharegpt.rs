//! `kind = "sharegpt"`: the ShareGPT layout, a JSON array (or JSON Lines) of
//! `{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}]}`.
//! A request is the first human turn; the answer after it gives the recorded output length.
//! Conversations without a human turn are skipped.

use serde::Deserialize;
use serde_json::Value;

use super::source::{numbered_lines, read_text, resolve, Candidate, Source, SourceSet};
use super::{DatasetContext, DatasetError};

#[derive(Debug, Deserialize)]
struct Conversation {
    #[serde(default, alias = "conversation", alias = "messages")]
    conversations: Vec<Turn>,
}

#[derive(Debug, Deserialize)]
struct Turn {
    #[serde(default, alias = "role")]
    from: Option<String>,
    #[serde(default, alias = "content")]
    value: Option<Value>,
}

pub(crate) fn read(path: &str, ctx: &DatasetContext) -> Result<SourceSet, DatasetError> {
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let entries: Vec<(usize, Conversation)> = if text.trim_start().starts_with('[') {
        let all: Vec<Conversation> =
            serde_json::from_str(&text).map_err(|source| DatasetError::Json {
                path: path.clone(),
                line: 0,
                source,
            })?;
        all.into_iter()
            .enumerate()
            .map(|(i, c)| (i + 1, c))
            .collect()
    } else {
        let mut all = Vec::new();
        for (line, raw) in numbered_lines(&text) {
            let c = serde_json::from_str(raw).map_err(|source| DatasetError::Json {
                path: path.clone(),
                line,
                source,
            })?;
            all.push((line, c));
        }
        all
    };
    let candidates: Vec<Candidate> = entries
        .into_iter()
        .filter_map(|(line, c)| first_exchange(c).map(|(q, a)| (line, q, a)))
        .map(|(line, question, answer)| Candidate {
            source: Source::Text(question),
            answer,
            line,
        })
        .collect();
    if candidates.is_empty() {
        return Err(DatasetError::Invalid(format!(
            "{} holds no conversation with a human turn (expected ShareGPT's \
             `conversations` of `from`/`value` turns)",
            path.display()
        )));
    }
    Ok(SourceSet {
        path,
        candidates,
        warn_on_cycle: true,
    })
}

/// The first human turn and the assistant answer right after it.
fn first_exchange(c: Conversation) -> Option<(String, Option<String>)> {
    let mut turns = c.conversations.into_iter();
    let question = turns.by_ref().find_map(|t| {
        let role = t.from.as_deref().unwrap_or_default();
        if matches!(role, "human" | "user") {
            text_of(t.value).filter(|s| !s.trim().is_empty())
        } else {
            None
        }
    })?;
    let answer = turns.next().and_then(|t| {
        let role = t.from.as_deref().unwrap_or_default();
        if matches!(
            role,
            "gpt" | "chatgpt" | "assistant" | "bard" | "bing" | "model"
        ) {
            text_of(t.value)
        } else {
            None
        }
    });
    Some((question, answer))
}

fn text_of(value: Option<Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conv(v: Value) -> Conversation {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn takes_the_first_human_turn_and_its_answer() {
        let c = conv(json!({"id": "x", "conversations": [
            {"from": "system", "value": "s"},
            {"from": "human", "value": "q1"},
            {"from": "gpt", "value": "a1"},
            {"from": "human", "value": "q2"}
        ]}));
        assert_eq!(first_exchange(c), Some(("q1".into(), Some("a1".into()))));
    }

    #[test]
    fn role_content_turns_and_missing_answers_work() {
        let c = conv(json!({"messages": [{"role": "user", "content": "q"}]}));
        assert_eq!(first_exchange(c), Some(("q".into(), None)));
        let c = conv(json!({"conversations": [{"from": "gpt", "value": "a"}]}));
        assert_eq!(first_exchange(c), None);
    }
}
