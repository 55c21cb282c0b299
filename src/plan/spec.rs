//! The plan as written: serde + schemars types, one schema for TOML and YAML.
//! `*Spec` types hold what the user wrote; validation and resolution happen elsewhere.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges;
use super::request_spec::{ReportSpec, RequestSpec};
use super::sim_settings::SimConfig;
use crate::units::HumanDuration;

/// A whole plan file (after imports are merged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    /// Other plan files whose tables are merged into this one (paths relative to this file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<String>,
    pub plan: PlanMeta,
    /// Servers to benchmark, by name.
    #[serde(default)]
    pub endpoints: BTreeMap<String, EndpointSpec>,
    /// Models, by name.
    #[serde(default)]
    pub models: BTreeMap<String, ModelSpec>,
    /// Request sources, by name.
    #[serde(default)]
    pub datasets: BTreeMap<String, DatasetSpec>,
    /// Request settings for every run unless an axis overrides them.
    #[serde(default)]
    pub defaults: RequestSpec,
    /// The axes whose cartesian product gives the runs, with `exclude` and `include`.
    #[serde(default)]
    pub matrix: crate::plan::matrix::MatrixSpec,
    /// Per-request service-level objectives; goodput counts requests that meet all of them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub slo: BTreeMap<String, String>,
    #[serde(default)]
    pub report: ReportSpec,
    /// Sign-off gates: metric name → condition (`"<= 2s"`, `">= 0.999"`, `">= -5%"` against a baseline).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gates: BTreeMap<String, String>,
    /// The thresholds of each run's verdict (`valid`, `suspect`, `invalid`).
    #[serde(
        default,
        skip_serializing_if = "super::trust_spec::TrustSpec::is_default"
    )]
    pub trust: super::trust_spec::TrustSpec,
    /// Golden requests mixed into each run's measured traffic, their answers checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<super::checks_spec::ChecksSpec>,
}

/// `[plan]`: the suite's identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanMeta {
    /// Names the output folder (`outputs/<name>/…`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Every random choice derives from it.
    #[serde(default)]
    pub seed: u64,
    /// Idle time between two runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "24h"))]
    pub pause_between_runs: Option<HumanDuration>,
    /// Whose TTFT/latency rules the reported metrics follow.
    #[serde(default)]
    pub metric_definitions: MetricDefinitions,
    /// What `results.db` keeps besides every request's timings and counts.
    #[serde(default, skip_serializing_if = "StoreSpec::is_default")]
    pub store: StoreSpec,
    /// Facts perfplan cannot read, recorded in the suite's environment and shown in its
    /// reports (`{ release = "1.8.0-rc2" }`); strings only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// `[plan] store = { bodies = true, text = true }`: keep each request's body and response
/// text in `results.db` (compressed), for `perfplan show`. Both default to off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreSpec {
    /// Each request body as sent (once per item of a run's request set).
    #[serde(default)]
    pub bodies: bool,
    /// Each response's generated text.
    #[serde(default)]
    pub text: bool,
}

impl StoreSpec {
    pub(crate) fn is_default(&self) -> bool {
        *self == StoreSpec::default()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricDefinitions {
    /// First non-empty content chunk; latency ends at the last content chunk.
    #[default]
    Perfplan,
    /// EvalScope perf's rules.
    Evalscope,
    /// `vllm bench serve`'s rules.
    Vllm,
}

/// Which OpenAI API a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApiSpec {
    Chat,
    Completions,
    Responses,
    Embeddings,
    Rerank,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheSetting {
    On,
    Off,
    #[default]
    Unknown,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheState {
    /// Prompts the server has never seen (the dataset seed is mixed with the run id).
    #[default]
    Cold,
    /// The identical request set is sent once unmeasured, then measured.
    Warm,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResetCacheBefore {
    #[default]
    Never,
    EachRun,
    EachCacheState,
}

/// How an endpoint's requests are spread over its replicas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Balance {
    /// Request N goes to replica N mod the replicas: exact shares.
    #[default]
    RoundRobin,
    /// Each request to a replica drawn from the plan's seed.
    Random,
    /// By the hash of the request's session id: a conversation (or group) sticks to one.
    Session,
}

/// `[endpoints.NAME]`: one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// `http://host:port`, with the server's path prefix if it has one (a trailing `/v1` is
    /// accepted once), or `sim://NAME` for the built-in simulator. Exactly one of
    /// `base_url` and `urls`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_url: String,
    /// Replicas with no balancer in front: the base URL of each (http:// or https://), at
    /// least two, instead of `base_url`. Requests are spread over them by `balance`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 2))]
    pub urls: Vec<String>,
    /// How requests are spread over `urls` (or a simulator's `replicas`): `round_robin`
    /// (default), `random` (seeded), or `session` (by the session id's hash, so a
    /// conversation sticks to one replica).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<Balance>,
    /// A header sent with each request carrying its session id: stable per conversation
    /// (multi-turn) or per item's group (single-turn), for routers that pin sessions
    /// (`"x-session-id"`). Absent: no header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
    /// Routes that replace an API's default one (`rerank = "/v2/rerank"`).
    #[serde(default, skip_serializing_if = "super::access::PathsSpec::is_empty")]
    pub paths: super::access::PathsSpec,
    /// How the server's certificate is checked (`ca_file`, `insecure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<super::access::TlsSpec>,
    /// Default API for this endpoint's runs (an `api` axis overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiSpec>,
    /// Name of the environment variable holding the API key (never the key itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How the server was started: with prefix caching `on`, `off`, or `unknown`.
    #[serde(default)]
    pub prefix_cache: CacheSetting,
    /// Request fields this server rejects; they are never sent to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reject_fields: Vec<String>,
    #[serde(default)]
    pub timeouts: TimeoutsSpec,
    /// How much of each response is read and kept (`max_event`, `max_body`, `max_text`,
    /// `overlong_factor`, `overlong_slack`, `max_chunks`).
    #[serde(default, skip_serializing_if = "super::limits::LimitsSpec::is_empty")]
    pub limits: super::limits::LimitsSpec,
    /// Probe the model list (`GET /v1/models`, or `paths.models`) before the first run.
    #[serde(default = "yes")]
    pub connection_test: bool,
    /// Measure the cold path: a new connection for every request (`Connection: close`),
    /// none kept or opened ahead; each request's connection setup time is recorded.
    // Left out of the resolved settings when false, so run ids stay as they were.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fresh_connections: bool,
    /// Settings of the built-in simulator when `base_url = "sim://NAME"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimConfig>,
    /// A shell command that starts the server before this endpoint's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
    /// Polled until it answers 200 after `launch`: a server path joined to `base_url` by the
    /// URL rule (`/health`) or a full URL (default: the model list, `/v1/models`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "1ms", "x-duration-maximum" = "24h"))]
    pub ready_timeout: Option<HumanDuration>,
    /// A shell command that stops the server (default: terminate the launched process group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// How to empty the server's prefix cache: `"POST /reset_prefix_cache"` or a shell command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_cache: Option<String>,
    #[serde(default)]
    pub reset_cache_before: ResetCacheBefore,
    /// Prometheus counter names for the server-side cache hit ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<ServerMetricsSpec>,
    /// Server telemetry scraped during each run (default: on, `/metrics`, every 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<super::TelemetrySpec>,
    /// The server's prefix-cache block size in tokens (vLLM's `--block-size`): a prompt
    /// is cached in whole blocks, so the planned hit ratio counts shared tokens in whole
    /// blocks. Default: the `block_size` label of `vllm:cache_config_info` on the
    /// server's `/metrics`, else none (shared tokens counted one by one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65_536))]
    pub cache_block_size: Option<u32>,
    /// What the server runs on and costs (`{ accelerators = 8, kind = "H200",
    /// cost_per_hour = 25.0 }`), for tokens/s per accelerator and cost per million
    /// tokens. Not part of run ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<super::HardwareSpec>,
    /// Facts about this server perfplan cannot read (`{ gpu = "H100", flags = "--tp 2" }`),
    /// recorded in the suite's environment; strings only. Not part of the run ids.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

pub use super::timeouts_spec::TimeoutsSpec;

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerMetricsSpec {
    #[serde(default = "default_metrics_path")]
    pub path: String,
    pub cache_hits: String,
    pub cache_queries: String,
}

fn default_metrics_path() -> String {
    "/metrics".to_string()
}

/// `[models.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// The name the server knows the model by (default: the table's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_name: Option<String>,
    /// Folder with `tokenizer.json` (+ `tokenizer_config.json`), or a `tokenizer.json` path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// Whether chat prompts are counted through the chat template.
    #[serde(default)]
    pub chat_template: ChatTemplateMode,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatTemplateMode {
    /// Use the template when the tokenizer folder has one.
    #[default]
    Auto,
    On,
    Off,
}

pub use super::token_range::TokenRange;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DatasetKind {
    Random,
    Prompt,
    Lines,
    Jsonl,
    Sharegpt,
    RandomMultiTurn,
    Conversations,
    /// Multi-turn conversations that offer tools and answer the model's tool calls.
    ToolCalls,
    Trace,
    RandomImages,
    Images,
    RandomEmbedding,
    Embedding,
    RandomRerank,
    Rerank,
    /// Weighted workload classes, each a dataset of its own (`mix`).
    Mix,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrefixRole {
    #[default]
    System,
    User,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputLenMode {
    /// Longer prompts cut to `target_input_len`; shorter ones kept (or filled from `prefix_file`).
    #[default]
    Cap,
    /// Longer prompts cut to `target_input_len`; shorter ones left out (not with `prefix_file`).
    Drop,
}

/// `[datasets.NAME]`: one request source. Which keys apply depends on `kind` (see the
/// dataset table of the book, loads/datasets.md); a key that does not apply is an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub kind: DatasetKind,
    /// Prompt length in tokens (`random`, …): fixed or `{min, max}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub input_tokens: Option<TokenRange>,
    /// Tokens shared by every request of a run, counted inside `input_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = ranges::MAX_TOKENS))]
    pub prefix_tokens: Option<u32>,
    /// `random`: distinct shared prefixes, `prefix_tokens` each; round robin or by `prefix_weights`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_PREFIX_GROUPS))]
    pub prefix_groups: Option<u32>,
    /// `random` with `prefix_groups`: one positive weight per group; each request draws
    /// its group from the run seed in these proportions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = ranges::MAX_PREFIX_GROUPS))]
    pub prefix_weights: Option<Vec<f64>>,
    /// `prompt`: the prompt text, or `"@path"` to read it from a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// File datasets: the file (relative to the plan file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `jsonl`: the field holding the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Real text cut to the token budget and put before each prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_file: Option<String>,
    /// With `prefix_file`: every request is exactly this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_TOKENS))]
    pub target_input_len: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_role: Option<PrefixRole>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_len_mode: Option<InputLenMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = ranges::MAX_TOKENS))]
    pub min_input_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = ranges::MAX_TOKENS))]
    pub max_input_tokens: Option<u32>,
    /// Multi-turn: turns per conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = 1000))]
    pub turns: Option<TokenRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub user_tokens: Option<TokenRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub assistant_tokens: Option<TokenRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "0s", "x-duration-maximum" = "1h"))]
    pub think_time: Option<HumanDuration>,
    /// Multi-turn: send each answer's reasoning back with it (the assistant message's
    /// `reasoning_content`) instead of its content alone, as OpenAI clients do by
    /// default (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub echo_reasoning: Option<bool>,
    /// `tool_calls`: the tools every request offers: a JSON file (relative to the plan
    /// file) holding a list of tools (`{"type": "function", "function": {"name",
    /// "description", "parameters"}}` or flat `{"name", "description", "parameters"}`,
    /// each with an optional `"result"` string: its mocked result); unset: the built-in
    /// `get_weather(city, unit?)`, `add(a, b)` and `search(query)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// `tool_calls`: most tool rounds of one turn (requests that send tool results back
    /// and continue the turn); default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 64))]
    pub max_tool_rounds: Option<u32>,
    /// `tool_calls`: the length in tokens of each mocked tool result whose tool has no
    /// `result` text, fixed or `{min, max}` (default 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub tool_result_tokens: Option<TokenRange>,
    /// Trace replay speed-up (2 = twice as fast).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.001, max = 1000))]
    pub speed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_mapping: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_output_length: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 16384))]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 16384))]
    pub height: Option<u32>,
    /// Image kinds: `png`/`jpeg`. `trace`: `perfplan` (default), `mooncake`, `burstgpt`, `azure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// `trace` with `format = "mooncake"`: tokens per `hash_ids` block (default 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65536))]
    pub block_size: Option<u32>,
    /// `trace`: replay only the records from this offset after the trace's first one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "0s"))]
    pub from: Option<HumanDuration>,
    /// `trace`: replay only the records before this offset after the trace's first one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-duration-minimum" = "1ms"))]
    pub to: Option<HumanDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub images_per_request: Option<u32>,
    /// Image kinds: the text part's length, fixed or `{min, max}` per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub text_tokens: Option<TokenRange>,
    /// Embeddings: inputs per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10_000))]
    pub batch_size: Option<u32>,
    /// `random_rerank`: the query's length, fixed or `{min, max}` per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub query_tokens: Option<TokenRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10_000))]
    pub num_documents: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.01, max = 100))]
    pub document_length_ratio: Option<f64>,
    /// `mix`: the workload classes, each `{ dataset, weight }` with optional `name`, `output_tokens` and `model` (each request drawn from one class by weight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub mix: Option<Vec<super::mix_spec::MixClassSpec>>,
    /// `mix`: `"weighted"` (default: a seeded draw by weight) or `"round_robin"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assign: Option<super::mix_spec::MixAssign>,
}
