//! `random_multi_turn` and `conversations`: scripts of user turns for multi-turn runs.
//! A script holds only what the client says (an optional system message and the user
//! turns); the answers are the server's real responses, appended by the suite before
//! the next turn. Random scripts are drawn per conversation index from the run seed
//! (`turns`, `user_tokens`, `assistant_tokens` as each turn's output limit, and
//! `prefix_tokens` as a system message shared by every conversation); a file gives one
//! conversation per JSONL line (`{"messages": [...]}`, a bare messages array, or
//! ShareGPT `{"conversations": [{"from", "value"}]}`), cycled, cut to `turns` at most.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::source::{json_line, numbered_lines, read_text, resolve, LineError};
use super::words::{draw_len, random_text};
use super::{DatasetContext, DatasetError};
use crate::plan::spec::TokenRange;
use crate::plan::{DatasetPlan, MultiTurn};
use crate::tokenize::Tokenizer;

/// One user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub user: String,
    /// The user text's tokens counted by the client (bare, without a template).
    pub client_tokens: Option<u32>,
    /// The output limit of this turn, when the dataset sets one (`assistant_tokens`).
    pub max_tokens: Option<u32>,
}

/// What the client says in one conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub system: Option<String>,
    pub turns: Vec<Turn>,
}

/// Where scripts come from; conversation `i` is the same whatever the request count.
#[derive(Debug, Clone)]
pub enum Conversations {
    Random {
        seed: u64,
        turns: TokenRange,
        user: TokenRange,
        assistant: Option<TokenRange>,
        system: Option<String>,
        tokenizer: Option<std::sync::Arc<Tokenizer>>,
    },
    File(Vec<Script>),
}

impl Conversations {
    /// Conversation number `i`.
    pub fn script(&self, i: usize) -> Result<Script, DatasetError> {
        match self {
            Conversations::File(list) => Ok(list[i % list.len()].clone()),
            Conversations::Random {
                seed,
                turns,
                user,
                assistant,
                system,
                tokenizer,
            } => {
                let mut rng = ChaCha8Rng::seed_from_u64(
                    seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                );
                let n = draw_len(*turns, &mut rng).max(1);
                let mut out = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let (text, count) =
                        random_text(tokenizer.as_deref(), draw_len(*user, &mut rng), &mut rng)?;
                    out.push(Turn {
                        user: text,
                        client_tokens: count,
                        max_tokens: assistant.map(|a| draw_len(a, &mut rng)),
                    });
                }
                Ok(Script {
                    system: system.clone(),
                    turns: out,
                })
            }
        }
    }
}

/// The conversations of a multi-turn dataset.
pub fn conversations(
    plan: &DatasetPlan,
    ctx: &DatasetContext,
) -> Result<Conversations, DatasetError> {
    match plan {
        DatasetPlan::RandomMultiTurn(m) | DatasetPlan::ToolCalls(m, _) => Ok(random(m, ctx)?),
        DatasetPlan::Conversations {
            path, max_turns, ..
        } => read_file(path, *max_turns, ctx),
        other => Err(DatasetError::Invalid(format!(
            "dataset kind `{}` holds no conversations",
            super::kind_name(other.kind())
        ))),
    }
}

fn random(m: &MultiTurn, ctx: &DatasetContext) -> Result<Conversations, DatasetError> {
    let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed ^ 0x7379_7374_656d);
    let system = match m.prefix_tokens {
        0 => None,
        n => Some(random_text(ctx.tokenizer.as_deref(), n, &mut rng)?.0),
    };
    Ok(Conversations::Random {
        seed: ctx.seed,
        turns: m.turns,
        user: m.user_tokens,
        assistant: m.assistant_tokens,
        system,
        tokenizer: ctx.tokenizer.clone(),
    })
}

fn read_file(
    path: &str,
    max_turns: Option<u32>,
    ctx: &DatasetContext,
) -> Result<Conversations, DatasetError> {
    let path = resolve(ctx, path);
    let text = read_text(&path)?;
    let max_turns = max_turns.map_or(usize::MAX, |t| t as usize);
    let mut list = Vec::new();
    for (line, raw) in numbered_lines(&text) {
        let mut script = parse_line(raw).map_err(|e| e.at(&path, line))?;
        script.turns.truncate(max_turns.max(1));
        if let Some(tok) = ctx.tokenizer.as_deref() {
            for t in &mut script.turns {
                t.client_tokens = Some(tok.count(&t.user, false)? as u32);
            }
        }
        list.push(script);
    }
    if list.is_empty() {
        return Err(DatasetError::Empty { path });
    }
    Ok(Conversations::File(list))
}

/// One line of a conversations file.
pub(crate) fn parse_line(raw: &str) -> Result<Script, LineError> {
    let v = json_line(raw)?;
    parse_conversation(&v).ok_or_else(|| {
        "expected {\"messages\": [...]}, a messages array, or ShareGPT {\"conversations\": [...]} with at least one user turn".into()
    })
}

/// A conversation line: its system message and user turns (assistant turns are dropped:
/// the server's real answers take their place).
pub(crate) fn parse_conversation(v: &Value) -> Option<Script> {
    let (list, role_key, text_key) = if let Some(m) = v.get("messages").and_then(Value::as_array) {
        (m, "role", "content")
    } else if let Some(c) = v.get("conversations").and_then(Value::as_array) {
        (c, "from", "value")
    } else if let Some(m) = v.as_array() {
        (m, "role", "content")
    } else {
        return None;
    };
    let mut system = None;
    let mut turns = Vec::new();
    for m in list {
        let role = m.get(role_key).and_then(Value::as_str).unwrap_or("");
        let text = match m.get(text_key) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => continue,
        };
        match role {
            "system" => system = Some(text),
            "user" | "human" => turns.push(Turn {
                user: text,
                client_tokens: None,
                max_tokens: None,
            }),
            _ => {}
        }
    }
    (!turns.is_empty()).then_some(Script { system, turns })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_line_shape_gives_the_user_turns() {
        let a = parse_conversation(&json!({"messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "u1"},
            {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}]}))
        .unwrap();
        assert_eq!(a.system.as_deref(), Some("s"));
        assert_eq!(
            a.turns.iter().map(|t| t.user.as_str()).collect::<Vec<_>>(),
            ["u1", "u2"]
        );
        let b = parse_conversation(&json!({"conversations": [
            {"from": "human", "value": "h"}, {"from": "gpt", "value": "g"}]}))
        .unwrap();
        assert_eq!(b.turns.len(), 1);
        assert!(parse_conversation(&json!([{"role": "assistant", "content": "x"}])).is_none());
    }

    #[test]
    fn random_scripts_are_stable_per_index() {
        let c = Conversations::Random {
            seed: 9,
            turns: TokenRange::Range { min: 2, max: 4 },
            user: TokenRange::Fixed(5),
            assistant: Some(TokenRange::Fixed(7)),
            system: None,
            tokenizer: None,
        };
        let s = c.script(3).unwrap();
        assert_eq!(s, c.script(3).unwrap());
        assert!((2..=4).contains(&s.turns.len()));
        assert!(s.turns.iter().all(|t| t.max_tokens == Some(7)));
    }
}
