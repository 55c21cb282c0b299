//! `TraceFormat`: what a `trace` dataset's file holds (`format`).

/// What a trace file holds (`format` of kind `trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceFormat {
    /// perfplan's JSONL: recorded bodies.
    #[default]
    Perfplan,
    /// Mooncake's JSONL: `timestamp` (ms), `input_length`, `output_length`, `hash_ids`.
    Mooncake,
    /// BurstGPT's CSV: `Timestamp` (s), `Model`, `Request tokens`, `Response tokens`, …
    Burstgpt,
    /// Azure's LLM inference CSV: `TIMESTAMP`, `ContextTokens`, `GeneratedTokens`.
    Azure,
}

/// Mooncake's published block size, in tokens.
pub const DEFAULT_BLOCK_SIZE: u32 = 512;

impl TraceFormat {
    /// The names a plan writes, in order.
    pub const NAMES: [&'static str; 4] = ["perfplan", "mooncake", "burstgpt", "azure"];

    /// The format named `name` (as written in a plan).
    pub fn parse(name: &str) -> Option<TraceFormat> {
        Some(match name {
            "perfplan" => TraceFormat::Perfplan,
            "mooncake" => TraceFormat::Mooncake,
            "burstgpt" => TraceFormat::Burstgpt,
            "azure" => TraceFormat::Azure,
            _ => return None,
        })
    }

    /// The formats whose prompts are synthesised, as messages name them.
    pub(crate) const SYNTHESIZED: &'static str =
        "a trace of `format = \"mooncake\"`, `\"burstgpt\"` or `\"azure\"`";

    /// Whether prompts are synthesised from lengths (every format but perfplan's).
    pub(crate) fn synthesized(self) -> bool {
        self != TraceFormat::Perfplan
    }
}
