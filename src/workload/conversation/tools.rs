//! The tool loop of a `tool_calls` run: the answer's tool calls and a mocked result per
//! call appended to the conversation (Chat Completions' `tool_calls` and `tool` messages,
//! or the Responses API's `function_call` and `function_call_output` items), and the
//! conversion of the latter to chat messages for the client's input count.

use std::sync::Arc;

use serde_json::{json, Value};

use super::ConversationSource;
use crate::record::RequestRecord;

/// The tool loop of a `tool_calls` run: every request offers `set`; an answer with tool
/// calls gets the assistant message with the calls and one `tool` message per call
/// (a mocked result) appended, and its turn goes on with another request (a tool round,
/// sent at once, no think time) up to `max_rounds` times; after that the next user turn
/// follows the results.
#[derive(Debug, Clone)]
pub struct ToolPlan {
    pub set: Arc<crate::api::tools::ToolSet>,
    pub max_rounds: u32,
    pub results: crate::dataset::tool_calls::ToolResults,
}

impl ConversationSource {
    /// Appends the answer's tool calls and a mocked result for each to conversation
    /// `slot`; `Ok(max_rounds)`, or `Err` when a result could not be made (noted in
    /// `errors`, and the conversation ends).
    pub(super) fn answer_tools(
        &mut self,
        slot: usize,
        tools: ToolPlan,
        id: usize,
        record: &RequestRecord,
    ) -> Result<u32, ()> {
        let conv = &mut self.active[slot];
        let (turn, round) = (conv.next_turn as u32, conv.round);
        let ids: Vec<String> = record
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| match c.id.is_empty() {
                true => format!("call_{id}_{turn}_{round}_{i}"),
                false => c.id.clone(),
            })
            .collect();
        let responses = self.plan.template.request.api == crate::api::ApiKind::Responses;
        let calls = record.tool_calls.iter().zip(&ids);
        let calls: Vec<Value> = calls
            .map(|(c, id)| match responses {
                true => json!({"type": "function_call", "call_id": id,
                    "name": c.name, "arguments": c.arguments}),
                false => json!({"id": id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}}),
            })
            .collect();
        match responses {
            // The Responses API takes the calls back as input items of their own.
            true => conv.messages.extend(calls),
            false => conv
                .messages
                .push(json!({"role": "assistant", "content": null, "tool_calls": calls})),
        }
        for (i, (call, call_id)) in record.tool_calls.iter().zip(&ids).enumerate() {
            let at = crate::dataset::tool_calls::ResultKey {
                conversation: id as u64,
                turn,
                round,
                call: i as u32,
            };
            let text = match tools.results.result(tools.set.find(&call.name), at) {
                Ok(text) => text,
                Err(e) => {
                    self.errors.push(crate::control::chain(&e));
                    return Err(());
                }
            };
            conv.messages.push(match responses {
                true => json!({"type": "function_call_output", "call_id": call_id, "output": text}),
                false => json!({"role": "tool", "tool_call_id": call_id, "content": text}),
            });
        }
        Ok(tools.max_rounds)
    }
}

/// A conversation as chat messages, for the chat template that counts it: the Responses
/// API's `function_call` items become an assistant message's `tool_calls` and its
/// `function_call_output` items `tool` messages, and a `null` content `""` (as vLLM
/// reads them).
pub(super) fn as_chat(items: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(items.len());
    for item in items {
        let field = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let call = json!({"id": field("call_id"), "type": "function",
                    "function": {"name": field("name"), "arguments": field("arguments")}});
                match out.last_mut().and_then(|m| m.get_mut("tool_calls")) {
                    Some(Value::Array(calls)) => calls.push(call),
                    _ => out.push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
                }
            }
            Some("function_call_output") => out.push(
                json!({"role": "tool", "tool_call_id": field("call_id"), "content": field("output")}),
            ),
            _ => out.push(item),
        }
    }
    // vLLM hands the template `""` for a message without content (an assistant message
    // with only tool calls); many templates cannot add `None` to a string.
    for m in &mut out {
        if m.get("content").is_some_and(Value::is_null) {
            m["content"] = json!("");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_items_count_as_the_chat_messages_vllm_makes_of_them() {
        let items = vec![
            json!({"role": "user", "content": "weather?"}),
            json!({"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"}),
            json!({"type": "function_call", "call_id": "b", "name": "g", "arguments": "{\"x\":1}"}),
            json!({"type": "function_call_output", "call_id": "a", "output": "sunny"}),
            json!({"type": "function_call_output", "call_id": "b", "output": "2"}),
            json!({"role": "assistant", "content": null, "tool_calls": []}),
        ];
        let chat = as_chat(items);
        assert_eq!(chat.len(), 5);
        assert_eq!(chat[1]["role"], "assistant");
        assert_eq!(chat[1]["content"], "");
        let calls = chat[1]["tool_calls"].as_array().unwrap();
        assert_eq!(
            (
                calls[0]["id"].as_str(),
                calls[1]["function"]["name"].as_str()
            ),
            (Some("a"), Some("g"))
        );
        assert_eq!(
            chat[2],
            json!({"role": "tool", "tool_call_id": "a", "content": "sunny"})
        );
        assert_eq!(chat[4]["content"], "");
    }
}
