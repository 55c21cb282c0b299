//! `ResponseLimits`: how much of one response the client reads and keeps, whatever the
//! server sends, so memory per request in flight stays bounded. Their defaults are the one
//! copy of these numbers (the plan's `limits` table fills in from them).

/// The limits of one endpoint's responses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResponseLimits {
    /// Longest SSE line, and longest joined data of one event, in bytes.
    pub max_event: usize,
    /// Largest non-streamed body, in bytes.
    pub max_body: usize,
    /// Generated text kept per response (multi-turn answers, `--debug`, the client's
    /// token count), in bytes; the count of what arrives goes on beyond it.
    pub max_text: usize,
    /// A stream is cut after `overlong_factor × limit + overlong_slack` output chunks,
    /// where `limit` is the output limit the request sent (`max_tokens`, ...).
    pub overlong_factor: f64,
    pub overlong_slack: u32,
    /// Output chunks of a stream whose request sent no output limit.
    pub max_chunks: u32,
}

impl ResponseLimits {
    pub(crate) const DEFAULT_MAX_EVENT: usize = 4 << 20;
    pub(crate) const DEFAULT_MAX_BODY: usize = 64 << 20;
    pub(crate) const DEFAULT_MAX_TEXT: usize = 1 << 20;
    pub(crate) const DEFAULT_OVERLONG_FACTOR: f64 = 2.0;
    pub(crate) const DEFAULT_OVERLONG_SLACK: u32 = 64;
    pub(crate) const DEFAULT_MAX_CHUNKS: u32 = 1 << 18;

    /// The most output chunks a stream may carry, given the request's output limit.
    pub(crate) fn chunk_cap(&self, max_output_tokens: Option<u32>) -> u64 {
        match max_output_tokens {
            Some(limit) => {
                let far = (f64::from(limit) * self.overlong_factor).ceil();
                // Saturating: a float beyond u64 becomes u64::MAX.
                (far as u64).saturating_add(u64::from(self.overlong_slack))
            }
            None => u64::from(self.max_chunks),
        }
    }
}

impl Default for ResponseLimits {
    fn default() -> Self {
        ResponseLimits {
            max_event: Self::DEFAULT_MAX_EVENT,
            max_body: Self::DEFAULT_MAX_BODY,
            max_text: Self::DEFAULT_MAX_TEXT,
            overlong_factor: Self::DEFAULT_OVERLONG_FACTOR,
            overlong_slack: Self::DEFAULT_OVERLONG_SLACK,
            max_chunks: Self::DEFAULT_MAX_CHUNKS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_cap_is_factor_plus_slack_or_the_fixed_cap() {
        let l = ResponseLimits::default();
        assert_eq!(l.chunk_cap(Some(256)), 2 * 256 + 64);
        assert_eq!(l.chunk_cap(Some(0)), 64);
        assert_eq!(l.chunk_cap(None), 262_144);
        let huge = ResponseLimits {
            overlong_factor: 1e30,
            ..l
        };
        assert_eq!(huge.chunk_cap(Some(u32::MAX)), u64::MAX);
    }
}
