//! `StreamTokens`: what a streamed response said about its output tokens chunk by chunk.
//! A chunk is not a token: a server can send a chunk that carries no text (vLLM's special
//! tokens under `ignore_eos` arrive as `delta.content = ""`) or several tokens at once
//! (speculative decoding, detokenizer buffering, a proxy that coalesces). The record keeps
//! how many chunks carried a choice, and for each content chunk how many output tokens
//! had arrived up to it: from the server's running usage on every chunk when it sends one
//! (vLLM's `stream_options.continuous_usage_stats`), else one token per chunk that carries
//! a token slot (see `TokenSource`).

use serde::{Deserialize, Serialize};

/// Where a stream's token counts come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// One token per chunk of choice 0 that carries a token: a text field (`content`,
    /// reasoning, completions' `text`, a Responses delta), even an empty one, or a tool
    /// call; not the opening chunk that only names the role (`{"role": "assistant",
    /// "content": ""}`) and not a closing chunk with an empty delta.
    #[default]
    Chunks,
    /// The server's running `usage.completion_tokens` on every chunk (per-chunk usage).
    Usage,
}

/// The token counts of one streamed response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamTokens {
    /// Chunks that carried choice 0, empty ones included (the opening role chunk too).
    pub choice_chunks: u32,
    /// Output tokens received up to and including each content chunk, in order: one
    /// entry per `RequestRecord::content_times` entry, never decreasing.
    pub at_content: Vec<u32>,
    /// Output tokens the stream delivered in all (those after the last content chunk too).
    pub total: u32,
    pub source: TokenSource,
}

impl StreamTokens {
    /// Counts one chunk of choice 0: `token` (it carries a token slot) and the server's
    /// running count on it, if any (per-chunk usage wins over counting chunks).
    pub(crate) fn on_choice(&mut self, token: bool, running: Option<u32>) {
        self.choice_chunks = self.choice_chunks.saturating_add(1);
        match running {
            Some(n) => {
                self.source = TokenSource::Usage;
                self.total = self.total.max(n);
            }
            None if token => self.total = self.total.saturating_add(1),
            None => {}
        }
    }

    /// Notes that a content chunk arrived (after `on_choice` counted it).
    pub(crate) fn on_content(&mut self) {
        self.at_content.push(self.total);
    }

    /// The tokens each content chunk brought (since the previous content chunk; the
    /// first one's since the stream began).
    pub(crate) fn per_content(&self) -> impl Iterator<Item = u32> + '_ {
        let mut before = 0u32;
        self.at_content.iter().map(move |&n| {
            let k = n.saturating_sub(before);
            before = before.max(n);
            k
        })
    }

    /// Output tokens that arrived with or before the last content chunk.
    pub(crate) fn through_last_content(&self) -> u32 {
        self.at_content.last().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_count_tokens_unless_the_server_counts_them() {
        let mut s = StreamTokens::default();
        s.on_choice(false, None); // the role chunk
        s.on_choice(true, None); // "" (a special token)
        s.on_choice(true, None);
        s.on_content();
        s.on_choice(true, None);
        s.on_content();
        s.on_choice(true, None); // a trailing empty chunk
        assert_eq!((s.choice_chunks, s.total), (5, 4));
        assert_eq!(s.at_content, vec![2, 3]);
        assert_eq!(s.per_content().collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(s.through_last_content(), 3);
        let mut u = StreamTokens::default();
        u.on_choice(false, Some(0));
        u.on_choice(true, Some(3));
        u.on_content();
        u.on_choice(true, Some(5));
        u.on_content();
        assert_eq!((u.source, u.total), (TokenSource::Usage, 5));
        assert_eq!(u.per_content().collect::<Vec<_>>(), vec![3, 2]);
    }
}
