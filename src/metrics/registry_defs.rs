//! The entries of the metric registry (`registry`): every quantity of the
//! `<quantity>_<statistic>` families, every statistic, every scalar, in the vocabulary's
//! order (the order of every export's metric columns: a new metric goes at the end of
//! its list). Data only: the types and lookups are `registry`'s.

use super::registry::{Direction, MetricDef, MetricUnit, StatisticDef};
use Direction::{Higher, Lower, Neither};
use MetricUnit::{
    CostPerMillionTokens, Count, JoulesPerToken, Millis, Ratio, RequestsPerSec, Seconds, Tokens,
    TokensPerJoule, TokensPerSec, Watts,
};

const fn m(
    name: &'static str,
    unit: MetricUnit,
    direction: Direction,
    definition: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        unit,
        direction,
        definition,
    }
}

/// The quantities of the distributions (`<quantity>_<statistic>`), per request.
pub(crate) const QUANTITY_DEFS: [MetricDef; 18] = [
    m("ttft", Millis, Lower, "time to first token: request sent → first chunk with any output (content, reasoning or a tool call)"),
    m("tpot", Millis, Lower, "time per output token: (latency − TTFT) / (output tokens − 1), requests of two or more output tokens"),
    m("itl", Millis, Lower, "inter-token latency, per token: each gap between content chunks spread evenly over the output tokens that arrived in it (a gap of k tokens is k samples of gap / k); with one token per chunk, the gaps as observed"),
    m("latency", Millis, Lower, "request sent → last output chunk"),
    m("input_tokens", Tokens, Neither, "prompt tokens, the server's usage (the client's count when usage is missing)"),
    m("output_tokens", Tokens, Neither, "output tokens, the server's usage (the client's count when usage is missing)"),
    m("cached_tokens", Tokens, Neither, "prompt tokens the server reports as read from its prefix cache"),
    m("lateness", Millis, Lower, "send lateness: actual − intended send time (client health)"),
    m("connect", Millis, Lower, "connection setup (TCP, and TLS) of the measured requests that opened a connection"),
    m("ttfo", Millis, Lower, "time to first output: request sent → first answer chunk (content or tool call) after any reasoning"),
    m("request_output_tps", TokensPerSec, Higher, "a request's output tokens / its latency (EvalScope's per-request Output tok/s)"),
    m("decode_tps", TokensPerSec, Higher, "a request's (output tokens − 1) / (latency − TTFT), 1 / TPOT (EvalScope's Decode tok/s)"),
    m("tls_handshake", Millis, Lower, "the TLS handshake part of `connect` of the measured requests that opened an https:// connection on the lean client (handshakes before the clock are in the run's extras, `preconnect`)"),
    m("chunk_gap", Millis, Lower, "the gaps between content chunks as observed (what `itl` reports when every chunk is one token)"),
    m("tokens_per_chunk", Tokens, Neither, "a request's output tokens over its content chunks (1 where every chunk is a token)"),
    m("reasoning_tokens", Tokens, Neither, "the reasoning part of a request's output: the server's completion_tokens_details.reasoning_tokens, else the client's count of the reasoning text"),
    m("answer_tokens", Tokens, Neither, "the answer part of a request's output: output tokens less reasoning tokens"),
    m("client_delay", Millis, Lower, "how long after the kernel received it the client read a request's first content chunk: the client's own part of TTFT, which the kernel's receive stamps take out (measured requests timed by them; client health)"),
];

/// The statistics of every distribution, in column order.
pub(crate) const STATISTIC_DEFS: [StatisticDef; 14] = [
    StatisticDef {
        name: "mean",
        definition: "the arithmetic mean",
    },
    StatisticDef {
        name: "stdev",
        definition: "the sample standard deviation",
    },
    StatisticDef {
        name: "min",
        definition: "the smallest value",
    },
    StatisticDef {
        name: "p1",
        definition: "the 1st percentile (linear interpolation between closest ranks)",
    },
    StatisticDef {
        name: "p5",
        definition: "the 5th percentile",
    },
    StatisticDef {
        name: "p10",
        definition: "the 10th percentile",
    },
    StatisticDef {
        name: "p25",
        definition: "the 25th percentile",
    },
    StatisticDef {
        name: "p50",
        definition: "the median",
    },
    StatisticDef {
        name: "p75",
        definition: "the 75th percentile",
    },
    StatisticDef {
        name: "p90",
        definition: "the 90th percentile",
    },
    StatisticDef {
        name: "p95",
        definition: "the 95th percentile",
    },
    StatisticDef {
        name: "p99",
        definition: "the 99th percentile",
    },
    StatisticDef {
        name: "p999",
        definition: "the 99.9th percentile",
    },
    StatisticDef {
        name: "max",
        definition: "the largest value",
    },
];

/// Scalars, one value per run, measured by the client.
pub(crate) const SCALAR_DEFS: [MetricDef; 62] = [
    m("requests_ok", Count, Higher, "measured requests that succeeded"),
    m("requests_failed", Count, Lower, "measured requests that failed (any outcome but ok or cancelled)"),
    m("success_ratio", Ratio, Higher, "requests_ok / measured requests not cancelled by the client"),
    m("duration_s", Seconds, Lower, "first measured request sent → last measured response finished"),
    m("rps", RequestsPerSec, Higher, "request throughput: successful requests / duration_s"),
    m("output_tps", TokensPerSec, Higher, "output token throughput: output tokens of successful requests / duration_s"),
    m("total_tps", TokensPerSec, Higher, "total token throughput: (input + output) tokens of successful requests / duration_s"),
    m("goodput_rps", RequestsPerSec, Higher, "good_requests / duration_s: successful requests meeting every per-request objective of [slo] per second (rps without one)"),
    m("cache_hit_ratio", Ratio, Higher, "cached prompt tokens / prompt tokens, from the responses' usage"),
    m("server_cache_hit_ratio", Ratio, Higher, "prefix-cache hits / queries, from the server's /metrics counters before and after the run"),
    m("planned_prefix_share", Ratio, Higher, "the share of the run's prompt tokens its plan shares between requests (prefixes, template)"),
    m("planned_template_share", Ratio, Higher, "the share of the run's prompt tokens that is the chat template's fixed preamble"),
    m("client_cpu_ratio", Ratio, Lower, "CPU time of the thread driving the requests / the run's wall time (client health)"),
    m("input_tps", TokensPerSec, Higher, "input token throughput: input tokens of successful requests / duration_s"),
    m("inputs_per_s", RequestsPerSec, Higher, "inputs (embedding texts, rerank documents) of successful requests / duration_s"),
    m("sla_max_concurrency", Count, Higher, "an SLA search's highest concurrency meeting every objective"),
    m("sla_max_rate", RequestsPerSec, Higher, "an SLA search's highest rate meeting every objective"),
    m("ttft_first_turn_mean", Millis, Lower, "multi-turn runs: mean TTFT of first turns"),
    m("ttft_later_turns_mean", Millis, Lower, "multi-turn runs: mean TTFT of later turns"),
    m("cache_hit_ratio_later_turns", Ratio, Higher, "multi-turn runs: cached share of later turns' prompt tokens (usage)"),
    m("sla_best_concurrency", Count, Higher, "an SLA search with an objective: the passing concurrency with the best objective"),
    m("sla_best_rate", RequestsPerSec, Higher, "an SLA search with an objective: the passing rate with the best objective"),
    m("requests_no_output", Count, Lower, "successful measured requests that carried no output at all"),
    m("steady_s", Seconds, Higher, "the length of the run's steady-state window"),
    m("ttft_p50_steady", Millis, Lower, "median TTFT of the requests sent in the steady window"),
    m("ttft_p99_steady", Millis, Lower, "99th percentile TTFT of the requests sent in the steady window"),
    m("tpot_p50_steady", Millis, Lower, "median TPOT of the requests sent in the steady window"),
    m("tpot_p99_steady", Millis, Lower, "99th percentile TPOT of the requests sent in the steady window"),
    m("itl_p50_steady", Millis, Lower, "median ITL of the requests sent in the steady window"),
    m("latency_p50_steady", Millis, Lower, "median latency of the requests sent in the steady window"),
    m("latency_p99_steady", Millis, Lower, "99th percentile latency of the requests sent in the steady window"),
    m("rps_steady", RequestsPerSec, Higher, "successful requests that ended in the steady window / steady_s"),
    m("output_tps_steady", TokensPerSec, Higher, "output tokens that arrived in the steady window / steady_s"),
    m("answer_tps", TokensPerSec, Higher, "answer tokens (reasoning left out) per second over the run's duration, beside output_tps"),
    m("good_requests", Count, Higher, "successful measured requests meeting every per-request objective of [slo] (requests_ok without one)"),
    m("slo_attainment", Ratio, Higher, "good_requests / measured requests not cancelled: the share meeting every objective of [slo], failed requests never (DistServe's SLO attainment; success_ratio without one)"),
    m("goodput_tokens_per_s", TokensPerSec, Higher, "output tokens of good requests / duration_s (output_tps without [slo])"),
    m("in_flight_mean", Count, Neither, "measured requests in flight, time-weighted mean over duration_s: the sum of their (end − sent) / duration_s"),
    m("output_tps_per_user", TokensPerSec, Higher, "output_tps / concurrency for a closed loop of fixed concurrency; output_tps / in_flight_mean for any other load"),
    m("output_tps_per_accelerator", TokensPerSec, Higher, "output_tps / the endpoint's hardware.accelerators"),
    m("cost_per_million_output_tokens", CostPerMillionTokens, Lower, "hardware.cost_per_hour × duration_s / 3600 / output tokens × 10⁶ (the currency of cost_per_hour)"),
    m("cost_per_million_total_tokens", CostPerMillionTokens, Lower, "hardware.cost_per_hour × duration_s / 3600 / (input + output) tokens × 10⁶"),
    m("cost_per_million_good_output_tokens", CostPerMillionTokens, Lower, "hardware.cost_per_hour × duration_s / 3600 / output tokens of good requests × 10⁶"),
    m("client_wait_ratio", Ratio, Lower, "time the thread driving the requests was ready to run but waited for a CPU (another process held its cores) / the run's wall time (client health; Linux)"),
    m("knee_concurrency", Count, Higher, "an exploring load's knee: the concurrency of its step with the highest output_tps / latency_p50 (Kleinrock's power), where queueing starts to cost more latency than it buys throughput"),
    m("knee_rps", RequestsPerSec, Higher, "an exploring load's knee by rate (`by = \"rate\"`): the arrival rate of its step with the highest output_tps / latency_p50"),
    m("knee_output_tps", TokensPerSec, Higher, "output_tps of an exploring load's knee step"),
    m("saturation_concurrency", Count, Higher, "an exploring load's saturation point: the highest concurrency whose step still gained throughput by its rule (null when `max` was reached still gaining, or the first step failed)"),
    m("saturation_rps", RequestsPerSec, Higher, "an exploring load's saturation point by rate (`by = \"rate\"`): the highest arrival rate whose step still gained throughput by its rule (null as saturation_concurrency is)"),
    m("saturation_output_tps", TokensPerSec, Higher, "output_tps of an exploring load's saturation step"),
    m("kernel_clock_ratio", Ratio, Neither, "measured requests whose answer was timed by the kernel's receive stamps / measured requests that read an answer (1 on the lean client over TCP on Linux; 0 where the client's reads timed it: the reqwest path, a refused option, another platform)"),
    m("cancelled_requests", Count, Neither, "measured requests the client cancelled: the load's `cancel`, a stop on saturation, Ctrl-C (not failures; out of every latency metric)"),
    m("cancelled_ratio", Ratio, Neither, "cancelled_requests / measured requests"),
    m("tool_calls_per_turn", Count, Neither, "tool_calls runs: tool calls of measured successful requests / their user turns (requests of round 0)"),
    m("tool_call_parse_ok_ratio", Ratio, Higher, "tool_calls runs: tool calls that parsed (a tool offered, arguments JSON valid for its schema's type, required, properties, items, enum) / tool calls, of measured successful requests"),
    m("tool_calls_unparsed", Count, Lower, "tool_calls runs: tool calls of measured successful requests that did not parse"),
    m("ttft_user_round_mean", Millis, Lower, "tool_calls runs: mean TTFT of requests that open a turn with the user's message (round 0)"),
    m("ttft_tool_round_mean", Millis, Lower, "tool_calls runs: mean TTFT of requests that send tool results back (rounds 1 and later)"),
    m("ttft_tool_round_p99", Millis, Lower, "tool_calls runs: 99th percentile TTFT of requests that send tool results back"),
    m("answers_checked", Count, Neither, "[checks]: golden requests of the run not cancelled (phase `check`; out of every other metric)"),
    m("answers_ok_ratio", Ratio, Higher, "[checks]: golden answers equal to the expected one (exact after trimming, regex, JSON valid for the schema, a tool call that parses) / answers_checked; a failed golden request counts as not ok"),
    m("answers_unparsed_ratio", Ratio, Lower, "[checks]: golden answers that could not be read for their check (empty, not JSON, no tool call or arguments not JSON) / answers_checked"),
];

/// Scalars of the server's side, from telemetry scraped during the run (null without
/// it); they follow `SCALAR_DEFS` in every export.
pub(crate) const SERVER_DEFS: [MetricDef; 18] = [
    m(
        "server_ttft_p50",
        Millis,
        Lower,
        "median TTFT of the server's own histogram over the run (its clock)",
    ),
    m(
        "server_ttft_p99",
        Millis,
        Lower,
        "99th percentile TTFT of the server's own histogram",
    ),
    m(
        "server_itl_p50",
        Millis,
        Lower,
        "median inter-token latency of the server's own histogram",
    ),
    m(
        "server_itl_p99",
        Millis,
        Lower,
        "99th percentile inter-token latency of the server's own histogram",
    ),
    m(
        "server_latency_p50",
        Millis,
        Lower,
        "median end-to-end latency of the server's own histogram",
    ),
    m(
        "server_latency_p99",
        Millis,
        Lower,
        "99th percentile end-to-end latency of the server's own histogram",
    ),
    m(
        "kv_cache_usage_mean",
        Ratio,
        Neither,
        "mean KV-cache use (0..1) over the run's scrapes",
    ),
    m(
        "kv_cache_usage_max",
        Ratio,
        Neither,
        "highest KV-cache use (0..1) over the run's scrapes",
    ),
    m(
        "queue_depth_mean",
        Count,
        Lower,
        "mean number of waiting requests over the run's scrapes",
    ),
    m(
        "queue_depth_max",
        Count,
        Lower,
        "highest number of waiting requests over the run's scrapes",
    ),
    m(
        "running_mean",
        Count,
        Neither,
        "mean number of requests in the batch over the run's scrapes",
    ),
    m(
        "running_max",
        Count,
        Neither,
        "highest number of requests in the batch over the run's scrapes",
    ),
    m(
        "preemptions",
        Count,
        Lower,
        "preemptions during the run (counter increase)",
    ),
    m(
        "spec_decode_acceptance",
        Ratio,
        Higher,
        "accepted / drafted speculative tokens during the run",
    ),
    m(
        "gpu_utilization_mean",
        Ratio,
        Neither,
        "mean GPU utilisation (0..1) of a DCGM exporter's GPUs",
    ),
    m(
        "gpu_power_w_mean",
        Watts,
        Lower,
        "mean GPU power draw of a DCGM exporter's GPUs",
    ),
    m(
        "energy_j_per_output_token",
        JoulesPerToken,
        Lower,
        "GPU energy over the run / output tokens",
    ),
    m(
        "output_tokens_per_joule",
        TokensPerJoule,
        Higher,
        "output tokens / GPU energy over the run: 1 / energy_j_per_output_token",
    ),
];
