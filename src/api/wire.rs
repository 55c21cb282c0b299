//! Borrowing serde shapes shared by the API parsers: usage, the first element of an
//! array (the rest skipped without allocating), and error probes. No HTTP, no plans.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::engine::record::Usage;

/// `usage` as chat/completions (`prompt_tokens`) or Responses (`input_tokens`) send it.
#[derive(Debug, Deserialize)]
pub(crate) struct UsageWire {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    total_tokens: Option<u32>,
    #[serde(default)]
    prompt_tokens_details: Option<DetailsWire>,
    #[serde(default)]
    input_tokens_details: Option<DetailsWire>,
}

#[derive(Debug, Deserialize)]
struct DetailsWire {
    #[serde(default)]
    cached_tokens: Option<u32>,
}

impl UsageWire {
    pub(crate) fn to_usage(&self) -> Usage {
        let details = self
            .prompt_tokens_details
            .as_ref()
            .or(self.input_tokens_details.as_ref());
        Usage {
            prompt_tokens: self.prompt_tokens.or(self.input_tokens),
            completion_tokens: self.completion_tokens.or(self.output_tokens),
            cached_tokens: details.and_then(|d| d.cached_tokens),
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

/// The first element of a JSON array; the other elements are skipped. `null` is `None`.
#[derive(Debug)]
pub(crate) struct FirstOf<T>(pub Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for FirstOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FirstVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for FirstVisitor<T> {
            type Value = FirstOf<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<T>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstOf(first))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(FirstOf(None))
            }
        }
        d.deserialize_any(FirstVisitor(PhantomData))
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
