//! `kind = "sharegpt"`: the ShareGPT layout, a JSON array (or JSON Lines) of
//! `{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}]}`.
//! A request is the first human turn; the answer after it gives the recorded output length.
//! Conversations without a human turn are skipped.

use serde::Deserialize;
use serde_json::Value;

use super::source::{numbered_lines, read_text, resolve, Candidate, LineError, Source, SourceSet};
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
    let mut candidates = Vec::new();
    for (line, exchange) in exchanges(&text) {
        if let Some((question, answer)) = exchange.map_err(|e| e.at(&path, line))? {
            candidates.push(Candidate {
                source: Source::Text(question),
                answer,
                line,
            });
        }
    }
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

/// A conversation's first question and its answer, if it has a human turn.
pub(crate) type Exchange = Option<(String, Option<String>)>;

/// Each conversation of a ShareGPT file (a JSON array, or JSON Lines) with its line (its
/// position in an array), as its first exchange: `None` for one without a human turn.
/// A malformed array is one error at the line where the JSON breaks.
pub(crate) fn exchanges(text: &str) -> Vec<(usize, Result<Exchange, LineError>)> {
    if text.trim_start().starts_with('[') {
        return match serde_json::from_str::<Vec<Conversation>>(text) {
            Ok(all) => all
                .into_iter()
                .enumerate()
                .map(|(i, c)| (i + 1, Ok(first_exchange(c))))
                .collect(),
            Err(e) => vec![(e.line(), Err(LineError::Json(e)))],
        };
    }
    numbered_lines(text)
        .map(|(line, raw)| {
            let parsed = serde_json::from_str::<Conversation>(raw)
                .map(first_exchange)
                .map_err(LineError::Json);
            (line, parsed)
        })
        .collect()
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
