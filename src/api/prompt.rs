//! `Prompt`: what one request asks, as produced by a dataset and turned into a body by
//! the API modules. Pure data.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The input of one request, independent of the request fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prompt {
    /// Plain text: a completions prompt, or the single user message of a chat.
    Text(String),
    /// Token ids for `/v1/completions` (`tokenize_prompt = true`).
    TokenIds(Vec<u32>),
    /// A chat conversation: OpenAI message objects (`{"role", "content"}`), content may
    /// be a string or a list of parts (text, `image_url`).
    Messages(Vec<Value>),
    /// A whole request body taken from a dataset file; fields of the plan are added to it.
    Body(Map<String, Value>),
    /// Embedding inputs (one request, `batch_size` inputs).
    Embedding(Vec<String>),
    /// A rerank query and its documents.
    Rerank {
        query: String,
        documents: Vec<String>,
    },
}
