//! Tool calls of one answer, as the client assembled them from the stream's deltas
//! (`tool_calls[i].function.{name, arguments}` by `index`, or Responses' function-call
//! items), and the tally of a tool-calling run's request: its round and how many of its
//! calls parsed. The tally is stored; the calls are not (they build the next round).

use serde::{Deserialize, Serialize};

/// One tool call of an answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Its place among the answer's parallel calls (`index`; Responses: `output_index`).
    pub index: u32,
    /// `id` (Responses: `call_id`); empty when the server sent none.
    pub id: String,
    pub name: String,
    /// The arguments text as received (JSON when the model got it right).
    pub arguments: String,
}

/// What a tool-calling run's request says about tools: which round of its turn it is
/// (0: the user's message; 1..: after tool results) and how many tool calls its answer
/// carried and parsed (a known tool, arguments valid JSON and valid for the tool's schema).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolTally {
    pub round: u16,
    pub calls: u32,
    pub parsed: u32,
}
