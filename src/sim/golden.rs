//! Golden requests the simulator can solve, answered as `golden_answers` says (exact
//! truth for `answers_ok_ratio`): "What is A + B?" (the sum; wrong: the sum + 1), a
//! person's JSON extraction from "NAME is N years old." (`{"name", "age"}`; wrong: the
//! age as a string, which breaks the schema), and a request offering tools whose prompt
//! names one of them (a call with valid arguments; wrong: arguments `{}`, missing the
//! required keys). Any other prompt is answered as usual. Knows nothing about HTTP.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::request::Job;
use super::tools::{PlannedCall, SimTool};
use super::SimConfig;

/// A golden prompt the simulator recognised.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Question {
    Sum(u64, u64),
    Person { name: String, age: u64 },
    Tool(String),
}

/// How the simulator answers a recognised golden prompt.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    /// The answer's text cut into output tokens (JSON-escaped pieces).
    pub pieces: Option<Arc<[String]>>,
    pub call: Option<PlannedCall>,
    pub correct: bool,
}

/// The text of the request's last user message (chat, Responses) or its prompt
/// (completions): what a golden prompt is looked for in.
pub(crate) fn prompt_text(body: &Value) -> Option<String> {
    if let Some(p) = body.get("prompt").and_then(Value::as_str) {
        return Some(p.to_string());
    }
    if let Some(i) = body.get("input").and_then(Value::as_str) {
        return Some(i.to_string());
    }
    let list = body
        .get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array)?;
    let last = list
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    last.get("content")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The golden question in `text`, if the simulator knows it (`tools`: the names offered).
pub(crate) fn question(text: &str, tools: &[String]) -> Option<Question> {
    if let Some(name) = tools.iter().find(|t| text.contains(t.as_str())) {
        return Some(Question::Tool(name.clone()));
    }
    let sum = regex::Regex::new(r"What is (\d+) \+ (\d+)\?").ok()?;
    if let Some(c) = sum.captures(text) {
        return Some(Question::Sum(c[1].parse().ok()?, c[2].parse().ok()?));
    }
    let person =
        regex::Regex::new(r#"JSON[^"]*"[^"]*"[^"]*"[^"]*"[^"]*"([^"]+?) is (\d+) years old\.""#)
            .ok()?;
    let c = person.captures(text)?;
    Some(Question::Person {
        name: c[1].to_string(),
        age: c[2].parse().ok()?,
    })
}

/// The golden question of a request body, looked for only under `golden_answers`.
pub(crate) fn question_of(cfg: &SimConfig, body: &Value, tools: &[SimTool]) -> Option<Question> {
    if cfg.golden_answers.is_off() {
        return None;
    }
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    question(&prompt_text(body)?, &names)
}

/// Text cut into tokens of at most 4 characters, each JSON-escaped for a string.
fn pieces(text: &str) -> Arc<[String]> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(4)
        .map(|c| {
            let s: String = c.iter().collect();
            let quoted = Value::String(s).to_string();
            quoted[1..quoted.len() - 1].to_string()
        })
        .collect()
}

/// The reply to request `seq` if it is a golden question and `golden_answers` is on.
pub(crate) fn reply(cfg: &SimConfig, job: &Job, seq: u64) -> Option<Reply> {
    let share = cfg.golden_answers.correct_share()?;
    let q = job.question.as_ref()?;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x676f_6c64 ^ seq.wrapping_mul(0x9e37_79b9));
    let correct = rng.gen::<f64>() < share;
    let text = |t: String| Reply {
        pieces: Some(pieces(&t)),
        call: None,
        correct,
    };
    Some(match q {
        Question::Sum(a, b) => text(format!("{}", a + b + u64::from(!correct))),
        Question::Person { name, age } => text(match correct {
            true => json!({"name": name, "age": age}).to_string(),
            false => json!({"name": name, "age": age.to_string()}).to_string(),
        }),
        Question::Tool(name) => {
            let tool = job.tools.iter().find(|t| t.name == *name)?;
            let arguments = match correct {
                true => super::tools::valid_arguments(&tool.parameters, 0),
                false => "{}".to_string(),
            };
            Reply {
                pieces: None,
                call: Some(PlannedCall {
                    id: format!("call_{seq:x}_0"),
                    name: name.clone(),
                    arguments,
                    malformed: !correct,
                }),
                correct,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_golden_prompts_are_recognised() {
        let q = |t: &str| question(t, &["get_weather".into()]);
        assert_eq!(
            q("What is 17 + 25? Answer with the number only."),
            Some(Question::Sum(17, 25))
        );
        let person = "Extract the person from this sentence as a JSON object with the keys \
            \"name\" (a string) and \"age\" (an integer): \"Ada Lovelace is 36 years old.\" \
            Answer with the JSON object only.";
        assert_eq!(
            q(person),
            Some(Question::Person {
                name: "Ada Lovelace".into(),
                age: 36
            })
        );
        assert_eq!(
            q("Use the get_weather tool."),
            Some(Question::Tool("get_weather".into()))
        );
        assert_eq!(q("the model serves tokens"), None);
        assert_eq!(pieces("{\"a\": 1}").join(""), "{\\\"a\\\": 1}");
    }
}
