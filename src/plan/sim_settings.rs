//! `SimConfig`: every setting of the simulator, shared by `perfplan sim --help`
//! (clap), a plan's `[endpoints.NAME.sim]` table (serde + JSON Schema), and tests.
//! The same names everywhere. Pure data and its checks, in `plan` because a plan holds it
//! (so `plan` never reaches the simulator); `sim` re-exports it.

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

    /// Fixed part of the time to first token: TTFT = queue wait + uncached prompt tokens /
    /// `prefill_tokens_per_s` + `ttft_base`.
    #[arg(long, default_value = "20ms", value_name = "DURATION")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "1h"))]
    pub ttft_base: HumanDuration,

    /// Prefill speed for uncached prompt tokens (adds prompt/prefill_tokens_per_s to TTFT); 0 = instant.
    #[arg(long, default_value_t = 0.0, value_name = "TOK_PER_S")]
    #[schemars(range(min = 0, max = 1e9))]
    pub prefill_tokens_per_s: f64,

    /// Inter-token time of a stream while the running batch is at or below `itl_knee`.
    #[arg(long, default_value = "5ms", value_name = "DURATION")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "1h"))]
    pub itl_base: HumanDuration,

    /// Running batch size beyond which the inter-token time grows.
    #[arg(long, default_value_t = 64, value_name = "N")]
    #[schemars(range(min = 0, max = 1_000_000))]
    pub itl_knee: u32,

    /// Extra inter-token time per running sequence beyond the knee.
    #[arg(long, default_value = "0ms", value_name = "DURATION")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "1h"))]
    pub itl_slope: HumanDuration,

    /// Tokens per streamed chunk; a chunk goes out when its last token is due (the first chunk
    /// at TTFT, then one every `tokens_per_chunk` × inter-token time).
    #[arg(long, default_value_t = 1, value_name = "N")]
    #[schemars(range(min = 1, max = 4096))]
    pub tokens_per_chunk: u32,

    /// Every Nth output token is a special token whose chunk carries no text
    /// (`"content": ""`), as vLLM streams special tokens under `ignore_eos`: tokens
    /// N, 2N, … of each answer add nothing to its text, though usage counts them and
    /// each still has its chunk (with `tokens_per_chunk`, a chunk of only such tokens
    /// has empty text). 0 (the default): none.
    #[arg(long, default_value_t = 0, value_name = "N")]
    #[schemars(range(min = 0, max = 1_000_000))]
    #[serde(skip_serializing_if = "is_zero")]
    pub empty_chunks: u32,

    /// Chat answers open with this many reasoning tokens (at most the output length):
    /// streamed in `delta.reasoning_content`, whole in `message.reasoning_content`, and
    /// counted in `usage.completion_tokens_details.reasoning_tokens`; the rest is the
    /// answer's `content`. 0 (the default): no reasoning, and no details in usage.
    #[arg(long, default_value_t = 0, value_name = "N")]
    #[schemars(range(min = 0, max = 10_000_000))]
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u32,

    /// Sequences generated at once; the rest wait in a queue (continuous batching).
    #[arg(long, default_value_t = 256, value_name = "N")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_num_seqs: u32,

    /// Requests that may wait in the queue at once: one that arrives while every batch
    /// slot is taken and this many already wait is answered HTTP 503 at once (SGLang's
    /// `--max-queued-requests`), so failures appear only above a load. Unset: no limit.
    #[arg(long, value_name = "N")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queued_requests: Option<u32>,

    /// Output length when the request does not set `ignore_eos`: a seeded natural length
    /// (exponential with this mean), at least `min_tokens`, capped by the route's limit
    /// (chat: `max_completion_tokens` or `max_tokens`; completions: `max_tokens`;
    /// responses: `max_output_tokens`). With `ignore_eos`: exactly the cap.
    #[arg(long, default_value_t = 128, value_name = "N")]
    #[schemars(range(min = 1, max = 10_000_000))]
    pub natural_output_mean: u32,

    /// Whether the simulated server caches prompt prefixes. `cached_tokens` is the longest run
    /// of cached full blocks within all but the last prompt token (as vLLM computes it).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub prefix_cache: bool,

    /// Prefix-cache block size in tokens.
    #[arg(long, default_value_t = 16, value_name = "N")]
    #[schemars(range(min = 1, max = 65_536))]
    pub block_size: u32,

    /// Prefix-cache capacity in blocks (least recently used blocks are evicted).
    #[arg(long, default_value_t = 65536, value_name = "N")]
    #[schemars(range(min = 0, max = 1_000_000_000))]
    pub cache_blocks: u32,

    /// When streamed responses end with a usage chunk (Responses API streams carry usage in
    /// `response.completed` unless `never`).
    #[arg(long, value_enum, default_value = "request")]
    pub usage: UsageMode,

    /// Leave `prompt_tokens_details.cached_tokens` out of streamed usage (xLLM's streaming completions do).
    #[arg(long)]
    pub omit_cached_tokens: bool,

    /// Request fields answered with HTTP 400 naming the field (xLLM rejects `seed` and `min_tokens`).
    #[arg(long = "reject-field", value_name = "FIELD")]
    pub reject_fields: Vec<String>,

    /// Folder or tokenizer.json for exact token counts of text. Without it, text is counted by
    /// an approximation: a token is a run of up to 8 ASCII letters, digits or `_` (longer runs
    /// split every 8), or any single other non-space character; whitespace is free. Chat
    /// messages add 2 tokens each (role and end markers) plus 1 for the reply prompt.
    /// Token-id prompts always count exactly their length.
    #[arg(long, value_name = "PATH")]
    pub tokenizer: Option<String>,

    /// Timing jitter of each generation: its first-token time (`ttft_base` plus prefill) and
    /// its inter-token time are scaled by one factor drawn uniformly from
    /// [1 − jitter, 1 + jitter] (seeded by `seed` and the arrival order; mean exactly 1),
    /// so repeated runs spread as they would on a real server while the truth stays exact
    /// (each record keeps its factor). 0 (the default) is no jitter; at most 0.9.
    // Left out of the settings when 0, so that a plan without jitter keeps its run ids.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 0.9), extend("default" = 0.0))]
    #[serde(skip_serializing_if = "no_jitter")]
    pub jitter: f64,

    /// Seed for natural output lengths, faults, jitter and response ids.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Record per-request ground truth (arrival, first and last token write times, tokens
    /// sent) and serve it on `GET /sim/truth` (`?reset=true` or `DELETE` clears it).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub truth: bool,

    /// Prompt tokens counted for each `image_url` part of a chat message (distinct per image).
    #[arg(long, default_value_t = 1, value_name = "N")]
    #[schemars(range(min = 0, max = 1_000_000))]
    pub image_tokens: u32,

    /// Length of the vectors returned by `POST /v1/embeddings`.
    #[arg(long, default_value_t = 384, value_name = "N")]
    #[schemars(range(min = 1, max = 65_536))]
    pub embedding_dim: u32,

    /// Fault: fraction of requests answered HTTP 429 (rate limited) at once.
    /// Faults are dealt from a seeded, shuffled deck of D requests, D the smallest count for
    /// which every fault fraction × D is whole (at most 10,000), so every D consecutive
    /// inference requests hold exactly fraction × D faults of each kind.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    pub fault_http_429: f64,

    /// Fault: fraction of requests answered HTTP 500 at once.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    pub fault_http_500: f64,

    /// Fault: fraction of requests answered HTTP 503 at once.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    pub fault_http_503: f64,

    /// Fault: fraction of responses whose connection is cut halfway through the output
    /// (no finish_reason, no usage, no `[DONE]`; a non-streamed body is cut in half).
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    pub fault_drop: f64,

    /// Fault: fraction of responses that stall halfway through the output and never finish
    /// (the connection stays open until the client gives up).
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    pub fault_stall: f64,

    /// Fault: fraction of responses with one malformed chunk (invalid JSON) halfway through;
    /// a non-streamed body is invalid JSON.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    pub fault_malformed: f64,

    /// Fault: fraction of responses whose HTTP headers are delayed by `fault_headers_delay`.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    pub fault_slow_headers: f64,

    /// Delay before the headers of a `fault_slow_headers` response.
    #[arg(long, default_value = "2s", value_name = "DURATION")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "1h"))]
    pub fault_headers_delay: HumanDuration,

    /// Fault: a request that ends without finishing (the client aborted it, or a drop or
    /// stall fault) keeps its batch slot and its KV-cache blocks for good, as a server
    /// that leaks aborted requests would: `vllm:num_requests_running` and
    /// `vllm:kv_cache_usage_perc` stay up after it (perfplan's `kv_leak` warning).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_name = "BOOL")]
    #[serde(skip_serializing_if = "is_false")]
    pub fault_leak_aborted: bool,
    /// Share of chat answers to requests that offer `tools` that are tool calls instead of
    /// text (seeded by `seed` and the arrival order); 0 never, 1 always. Requests without
    /// `tools` are not affected.
    #[arg(long, default_value_t = DEFAULT_TOOL_CALL_RATE, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    #[serde(skip_serializing_if = "is_default_tool_rate")]
    pub tool_call_rate: f64,

    /// Parallel tool calls in each tool-call answer (1 to 16), sharing its output tokens.
    #[arg(long, default_value_t = 1, value_name = "N")]
    #[schemars(range(min = 1, max = 16))]
    #[serde(skip_serializing_if = "is_one")]
    pub tool_calls_per_answer: u32,

    /// Fault: fraction of tool calls that do not parse (seeded): arguments cut short (not
    /// JSON), a required key left out, or an unknown tool name, in turn at random.
    #[arg(long, default_value_t = 0.0, value_name = "FRACTION")]
    #[schemars(range(min = 0, max = 1))]
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub fault_tool_arguments: f64,

    /// How golden requests of a plan's `[checks]` that the simulator can solve are
    /// answered ("What is A + B?", a person's JSON extraction, a call of the tool the
    /// prompt names): `off` (the usual text), `correct`, `wrong`, or the share answered
    /// correctly (0 to 1, seeded per request): the exact truth of `answers_ok_ratio`.
    #[arg(long, default_value = "off", value_name = "off|correct|wrong|SHARE")]
    #[serde(skip_serializing_if = "super::sim_golden::GoldenAnswers::is_off")]
    pub golden_answers: super::sim_golden::GoldenAnswers,

    /// Serve every route under this path prefix, as behind a gateway (`/gateway/openai`:
    /// `POST /gateway/openai/v1/chat/completions`, `GET /gateway/openai/metrics`, …).
    /// Requests outside it are answered 404, counted and printed to stderr. Default: the root.
    #[arg(long, value_name = "PATH")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,

    /// Replicas (1 to 64): that many simulators, each on its own port with its own prefix
    /// cache, queue and truth (`perfplan sim`: on `--port`, `--port`+1, …, each printed; in
    /// a plan, a `sim://NAME` endpoint's requests are spread over them by its `balance`).
    #[arg(long, default_value_t = 1, value_name = "N")]
    #[serde(skip_serializing_if = "is_one")]
    #[schemars(range(min = 1, max = 64))]
    pub replicas: u32,

    /// Workers (1 to 64) behind this simulator's one URL, as behind a KV-aware router
    /// (llm-d, Dynamo, SGLang's router): each its own prefix cache, batch slots, queue and
    /// ground truth, and `route` picks a worker for each inference request. `/metrics`
    /// then has one series per worker (label `engine`, as vLLM's data-parallel engines).
    #[arg(long, default_value_t = 1, value_name = "N")]
    #[serde(skip_serializing_if = "is_one")]
    #[schemars(range(min = 1, max = 64))]
    pub workers: u32,

    /// How requests are routed over `workers`: `session` (the default) by the hash of the
    /// `session_header` value, round robin for requests without it; `round_robin`; `random`
    /// (seeded by `seed` and the arrival order). Only with `workers` above 1.
    #[arg(long, value_enum, value_name = "RULE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteRule>,

    /// The header `route = "session"` reads (default `x-session-id`, the one perfplan's
    /// endpoint `session_header` usually names). Only with `workers` above 1.
    #[arg(long, value_name = "NAME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
}

/// How a simulator with `workers` routes a request to one of them.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum RouteRule {
    /// By the hash of the session header's value (sticky); round robin without it.
    #[default]
    Session,
    /// Request N (in arrival order) to worker N mod `workers`.
    RoundRobin,
    /// A seeded hash of the arrival order.
    Random,
    /// A new session to the worker holding the fewest sessions (ties to the lowest
    /// number), then kept there: sessions spread evenly and stick, as a router that
    /// balances load and keeps KV affinity (the newest 65,536 sessions remembered);
    /// round robin without the header.
    Sticky,
}

impl RouteRule {
    /// Whether the rule routes by the session header.
    pub(crate) fn reads_session(self) -> bool {
        matches!(self, RouteRule::Session | RouteRule::Sticky)
    }
}

/// The header `route = "session"` reads when `session_header` is not set.
pub(crate) const DEFAULT_SESSION_HEADER: &str = "x-session-id";

impl SimConfig {
    /// The header the session route reads.
    pub fn session_header(&self) -> &str {
        self.session_header
            .as_deref()
            .unwrap_or(DEFAULT_SESSION_HEADER)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The share of tool-call answers when `tool_call_rate` is not set.
pub(crate) const DEFAULT_TOOL_CALL_RATE: f64 = 0.5;

fn is_default_tool_rate(rate: &f64) -> bool {
    *rate == DEFAULT_TOOL_CALL_RATE
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
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
            empty_chunks: 0,
            reasoning_tokens: 0,
            max_num_seqs: 256,
            max_queued_requests: None,
            natural_output_mean: 128,
            prefix_cache: true,
            block_size: 16,
            cache_blocks: 65536,
            usage: UsageMode::Request,
            omit_cached_tokens: false,
            reject_fields: Vec::new(),
            tokenizer: None,
            jitter: 0.0,
            seed: 0,
            truth: true,
            image_tokens: 1,
            embedding_dim: 384,
            fault_http_429: 0.0,
            fault_http_500: 0.0,
            fault_http_503: 0.0,
            fault_drop: 0.0,
            fault_stall: 0.0,
            fault_malformed: 0.0,
            fault_slow_headers: 0.0,
            fault_headers_delay: ms(2000),
            fault_leak_aborted: false,
            tool_call_rate: DEFAULT_TOOL_CALL_RATE,
            tool_calls_per_answer: 1,
            fault_tool_arguments: 0.0,
            golden_answers: super::sim_golden::GoldenAnswers::default(),
            mount: None,
            replicas: 1,
            workers: 1,
            route: None,
            session_header: None,
        }
    }
}

/// `jitter` is off (its default), and so not written into a run's settings.
fn no_jitter(jitter: &f64) -> bool {
    *jitter == 0.0
}

pub use super::sim_checks::SettingError;

#[cfg(test)]
mod tests {
    use super::*;

    /// A new setting's default must not change the ids of runs on `sim://` endpoints,
    /// whose settings hold the whole simulator configuration.
    #[test]
    fn jitter_off_is_not_in_the_settings() {
        let off = serde_json::to_value(SimConfig::default()).unwrap();
        assert!(off.get("jitter").is_none(), "{off}");
        for key in [
            "workers",
            "route",
            "session_header",
            "replicas",
            "empty_chunks",
            "reasoning_tokens",
            "fault_leak_aborted",
        ] {
            assert!(off.get(key).is_none(), "{key}: {off}");
        }
        let on = SimConfig {
            jitter: 0.1,
            ..SimConfig::default()
        };
        assert_eq!(serde_json::to_value(on).unwrap()["jitter"], 0.1);
    }
}
