//! `SimConfig`: every setting of the simulator, shared by `perfplan sim --help`
//! (clap), a plan's `[endpoints.NAME.sim]` table (serde + JSON Schema), and tests.
//! The same names everywhere. Pure data: no server code here.

use clap::Args;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::HumanDuration;

fn ms(n: u64) -> HumanDuration {
    HumanDuration(std::time::Duration::from_millis(n))
}

/// When the simulator sends a usage object at the end of a stream.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum UsageMode {
    /// Only when the request asks (`stream_options.include_usage = true`), as vLLM does.
    Request,
    /// On every stream, asked or not.
    Always,
    /// Never, in streams or in non-streamed bodies (some servers send none).
    Never,
}

/// Settings of the simulated OpenAI-compatible server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Args)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Model names served (`GET /v1/models`); any other model name is answered 404.
    /// Empty: every model name is accepted.
    #[arg(long = "model", value_name = "NAME")]
    pub models: Vec<String>,

    /// Fixed part of the time to first token.
    #[arg(long, default_value = "20ms", value_name = "DURATION")]
    pub ttft_base: HumanDuration,

    /// Prefill speed for uncached prompt tokens (adds prompt/prefill_tokens_per_s to TTFT); 0 = instant.
    #[arg(long, default_value_t = 0.0, value_name = "TOK_PER_S")]
    pub prefill_tokens_per_s: f64,

    /// Inter-token time of a stream while the running batch is at or below `itl_knee`.
    #[arg(long, default_value = "5ms", value_name = "DURATION")]
    pub itl_base: HumanDuration,

    /// Running batch size beyond which the inter-token time grows.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub itl_knee: u32,

    /// Extra inter-token time per running sequence beyond the knee.
    #[arg(long, default_value = "0ms", value_name = "DURATION")]
    pub itl_slope: HumanDuration,

    /// Tokens per streamed chunk.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub tokens_per_chunk: u32,

    /// Sequences generated at once; the rest wait in a queue (continuous batching).
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub max_num_seqs: u32,

    /// Output length when the request sets neither `ignore_eos` nor a length: a seeded
    /// natural length with this mean, capped by `max_tokens`.
    #[arg(long, default_value_t = 128, value_name = "N")]
    pub natural_output_mean: u32,

    /// Whether the simulated server caches prompt prefixes.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub prefix_cache: bool,

    /// Prefix-cache block size in tokens.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub block_size: u32,

    /// Prefix-cache capacity in blocks (least recently used blocks are evicted).
    #[arg(long, default_value_t = 65536, value_name = "N")]
    pub cache_blocks: u32,

    /// When streamed responses end with a usage chunk.
    #[arg(long, value_enum, default_value = "request")]
    pub usage: UsageMode,

    /// Leave `prompt_tokens_details.cached_tokens` out of streamed usage (xLLM's streaming completions do).
    #[arg(long)]
    pub omit_cached_tokens: bool,

    /// Request fields answered with HTTP 400 naming the field (xLLM rejects `seed` and `min_tokens`).
    #[arg(long = "reject-field", value_name = "FIELD")]
    pub reject_fields: Vec<String>,

    /// Folder or tokenizer.json for exact token counts; without it a documented approximation.
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<String>,

    /// Seed for natural output lengths and faults.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Record per-request ground truth and serve it on `GET /sim/truth`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub truth: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            models: Vec::new(),
            ttft_base: ms(20),
            prefill_tokens_per_s: 0.0,
            itl_base: ms(5),
            itl_knee: 64,
            itl_slope: ms(0),
            tokens_per_chunk: 1,
            max_num_seqs: 256,
            natural_output_mean: 128,
            prefix_cache: true,
            block_size: 16,
            cache_blocks: 65536,
            usage: UsageMode::Request,
            omit_cached_tokens: false,
            reject_fields: Vec::new(),
            tokenizer: None,
            seed: 0,
            truth: true,
        }
    }
}
