//! Borrowing serde shapes shared by the API parsers: usage and error probes. No HTTP, no plans.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::record::Usage;

/// `usage` as chat/completions (`prompt_tokens`) or Responses (`input_tokens`) send it.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct UsageWire {
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u32>,
    #[serde(default)]
    pub(crate) completion_tokens: Option<u32>,
    #[serde(default)]
    pub(crate) input_tokens: Option<u32>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u32>,
    #[serde(default)]
    pub(crate) total_tokens: Option<u32>,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<DetailsWire>,
    #[serde(default)]
    pub(crate) input_tokens_details: Option<DetailsWire>,
    #[serde(default)]
    pub(crate) completion_tokens_details: Option<DetailsWire>,
    #[serde(default)]
    pub(crate) output_tokens_details: Option<DetailsWire>,
}

/// `*_tokens_details`: the cached part of a prompt, the reasoning part of an output.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DetailsWire {
    #[serde(default)]
    pub(crate) cached_tokens: Option<u32>,
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u32>,
}

impl UsageWire {
    pub(crate) fn to_usage(&self) -> Usage {
        let details = self
            .prompt_tokens_details
            .as_ref()
            .or(self.input_tokens_details.as_ref());
        let output = self
            .completion_tokens_details
            .as_ref()
            .or(self.output_tokens_details.as_ref());
        Usage {
            prompt_tokens: self.prompt_tokens.or(self.input_tokens),
            completion_tokens: self.completion_tokens.or(self.output_tokens),
            cached_tokens: details.and_then(|d| d.cached_tokens),
            reasoning_tokens: output.and_then(|d| d.reasoning_tokens),
        }
    }

    /// Embeddings and rerank: input tokens may only be given as `total_tokens`.
    pub(crate) fn to_input_usage(&self) -> Usage {
        let mut usage = self.to_usage();
        if usage.prompt_tokens.is_none() {
            usage.prompt_tokens = self.total_tokens;
        }
        usage
    }
}

/// Whether top-level `error` / `object` fields say the payload is an error object.
pub(crate) fn is_error(error: &Option<IgnoredAny>, object: &Option<Cow<'_, str>>) -> bool {
    error.is_some() || object.as_deref() == Some("error")
}

/// `Some` only for a non-empty string.
pub(crate) fn non_empty(text: Option<Cow<'_, str>>) -> Option<Cow<'_, str>> {
    text.filter(|t| !t.is_empty())
}
