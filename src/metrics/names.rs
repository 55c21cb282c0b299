//! The flat metric vocabulary of DESIGN.md ("Metric names"), used by `[report]`,
//! `[gates]`, `--metrics`, CSV columns and the JSON output.

/// Distributions: `<quantity>_<statistic>`.
pub const QUANTITIES: [&str; 16] = [
    "ttft",
    "tpot",
    "itl",
    "latency",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "lateness",
    // Connection setup (TCP connect, and TLS on the reqwest path) of the measured requests
    // that opened a connection; requests sent on an open connection have none.
    "connect",
    // Time to the first answer token after any reasoning (AIPerf's "time to first output
    // token"): the first content or tool-call chunk; equal to `ttft` without reasoning.
    "ttfo",
    // Per-request rates (EvalScope's "Output (tok/s)" and "Decode (tok/s)" columns), in
    // tokens per second: output tokens / latency, and (output tokens − 1) / (latency − TTFT)
    // (1 / TPOT; requests of two or more output tokens).
    "request_output_tps",
    "decode_tps",
    // Gaps between content chunks as observed (ms). `itl` is per token: each of these
    // gaps spread evenly over the output tokens that arrived in it (a gap of k tokens is
    // k samples of gap / k); with one token per chunk the two are the same.
    "chunk_gap",
    // Per request: output tokens over content chunks (1 where every chunk is a token).
    "tokens_per_chunk",
    // Per request: the reasoning part of the output (the server's
    // `completion_tokens_details.reasoning_tokens`, else the client's count of the
    // reasoning text) and the answer part (output tokens less reasoning tokens).
    "reasoning_tokens",
    "answer_tokens",
];

pub const STATISTICS: [&str; 14] = [
    "mean", "stdev", "min", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999",
    "max",
];

/// Scalars, one value per run.
pub const SCALARS: [&str; 34] = [
    "requests_ok",
    "requests_failed",
    "success_ratio",
    "duration_s",
    "rps",
    "output_tps",
    "total_tps",
    "goodput_rps",
    "cache_hit_ratio",
    "server_cache_hit_ratio",
    "planned_prefix_share",
    "planned_template_share",
    "client_cpu_ratio",
    "input_tps",
    "inputs_per_s",
    // The result of an SLA search (null for fixed loads): the highest passing value.
    "sla_max_concurrency",
    "sla_max_rate",
    // Multi-turn runs: TTFT of first turns vs later turns (ms), and the cached share of
    // later turns' prompts (from usage).
    "ttft_first_turn_mean",
    "ttft_later_turns_mean",
    "cache_hit_ratio_later_turns",
    // The result of an SLA search with an objective (`output_tps = "max"`): the passing
    // value with the best objective (null otherwise).
    "sla_best_concurrency",
    "sla_best_rate",
    // Successful measured requests that carried no output at all (no content, reasoning
    // or tool call): counted and warned about, never silently good.
    "requests_no_output",
    // The steady-state window (`metrics::steady`: every slot busy, before the drain):
    // its length (s), and the metrics of the requests it holds (null when it is empty or
    // shorter than two time slices).
    "steady_s",
    "ttft_p50_steady",
    "ttft_p99_steady",
    "tpot_p50_steady",
    "tpot_p99_steady",
    "itl_p50_steady",
    "latency_p50_steady",
    "latency_p99_steady",
    "rps_steady",
    "output_tps_steady",
    // Answer tokens (reasoning left out) per second over the run's duration, beside
    // `output_tps` (every output token).
    "answer_tps",
];

/// Scalars of the server's side: telemetry scraped during the run (null without it;
/// README, "Server telemetry"), which no request row holds (a merged or pooled run
/// carries them, never recomputes them). They follow `SCALARS` in every export:
/// quantiles of the server's own histograms over the run (ms) ...
pub const SERVER_SCALARS: [&str; 17] = [
    "server_ttft_p50",
    "server_ttft_p99",
    "server_itl_p50",
    "server_itl_p99",
    "server_latency_p50",
    "server_latency_p99",
    // ... its gauges over the run's scrapes (KV-cache use a fraction 0..1; queue depth:
    // waiting requests; running: requests in the batch) ...
    "kv_cache_usage_mean",
    "kv_cache_usage_max",
    "queue_depth_mean",
    "queue_depth_max",
    "running_mean",
    "running_max",
    // ... counters' increase (preemptions; accepted over drafted speculative tokens) and
    // the GPUs of a DCGM exporter (utilisation a fraction 0..1, power in W, energy in J
    // per output token).
    "preemptions",
    "spec_decode_acceptance",
    "gpu_utilization_mean",
    "gpu_power_w_mean",
    "energy_j_per_output_token",
];

/// Every scalar: `SCALARS`, then `SERVER_SCALARS`.
pub fn scalars() -> impl Iterator<Item = &'static str> {
    SCALARS.iter().chain(SERVER_SCALARS.iter()).copied()
}

/// The distributions measured in tokens per second.
pub fn is_rate_quantity(quantity: &str) -> bool {
    matches!(quantity, "request_output_tps" | "decode_tps")
}

/// Quantities measured in milliseconds (in JSON and CSV).
pub fn is_time_quantity(quantity: &str) -> bool {
    matches!(
        quantity,
        "ttft" | "tpot" | "itl" | "latency" | "lateness" | "connect" | "ttfo" | "chunk_gap"
    )
}

/// Every metric name, distributions first, in a fixed order.
pub fn all_names() -> Vec<String> {
    let mut names = Vec::with_capacity(
        QUANTITIES.len() * STATISTICS.len() + SCALARS.len() + SERVER_SCALARS.len(),
    );
    for q in QUANTITIES {
        for s in STATISTICS {
            names.push(format!("{q}_{s}"));
        }
    }
    names.extend(scalars().map(str::to_string));
    names
}

/// A mix class's value of metric `name`: `NAME@CLASS` (`ttft_p99@rag`), stored beside
/// the run's own metrics and read by gates and reports under that name.
pub fn class_metric(name: &str, class: &str) -> String {
    format!("{name}@{class}")
}

/// Whether `name` may name a class (it follows `@` in a class's metric names).
pub fn valid_class_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A metric name split into the vocabulary's name and the mix class it is of, if any.
pub fn split_class(metric: &str) -> (&str, Option<&str>) {
    match metric.split_once('@') {
        Some((name, class)) => (name, Some(class)),
        None => (metric, None),
    }
}

/// Whether `name` is a run's stored metric: one of the vocabulary, or a mix class's
/// (`NAME@CLASS`, a valid class name after a metric of the vocabulary).
pub fn is_metric_or_class(name: &str) -> bool {
    match split_class(name) {
        (metric, Some(class)) => valid_class_name(class) && is_metric(metric),
        (metric, None) => is_metric(metric),
    }
}

/// Whether `name` is in the vocabulary.
pub fn is_metric(name: &str) -> bool {
    if scalars().any(|s| s == name) {
        return true;
    }
    QUANTITIES.iter().any(|q| {
        name.strip_prefix(q)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|stat| STATISTICS.contains(&stat))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_is_consistent() {
        let names = all_names();
        assert_eq!(names.len(), 16 * 14 + SCALARS.len() + SERVER_SCALARS.len());
        assert!(is_metric("chunk_gap_p99") && is_time_quantity("chunk_gap"));
        assert!(is_metric("tokens_per_chunk_mean") && is_metric("answer_tps"));
        assert!(is_metric("reasoning_tokens_p50") && is_metric("answer_tokens_max"));
        assert!(is_metric("decode_tps_p99") && !is_time_quantity("decode_tps"));
        assert!(is_metric("ttft_p99_steady") && is_metric("steady_s"));
        assert!(is_metric("connect_p99"));
        assert!(is_metric("ttfo_p99") && is_time_quantity("ttfo"));
        assert!(is_metric("requests_no_output"));
        assert!(names.iter().all(|n| is_metric(n)));
        assert!(is_metric("ttft_p99"));
        assert!(is_metric("cached_tokens_mean"));
        assert!(!is_metric("ttft_p98"));
        assert!(!is_metric("tokens_mean"));
    }
}
