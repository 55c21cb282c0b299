//! Request bodies and response parsing for the OpenAI APIs (chat, completions, responses,
//! embeddings, rerank), and the SSE decoder. Honours `reject_fields`. Knows nothing about
//! plans, scheduling or storage.

pub mod prompt;

pub use prompt::Prompt;
