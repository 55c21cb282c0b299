//! The server families perfplan knows, mapped to its own names: vLLM (v1, and v0's older
//! names), SGLang, TGI, llama.cpp's `llama-server` (`--metrics`) and NVIDIA's DCGM
//! exporter. Names checked against each project's source. Several sources of one perfplan
//! name are alternatives in order of preference: a page's first one present is used (a
//! vLLM that exposes both `inter_token_latency_seconds` and its deprecated alias is not
//! counted twice). Pure data: knows no HTTP.

/// What a family's samples are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
    /// `_bucket{le}` (kept), `_sum` and `_count` lines.
    Histogram,
}

/// How a family's series (labels: model, engine, GPU) become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    Sum,
    /// The mean over series: a fraction or a utilisation per engine or per GPU.
    Mean,
}

/// One known family: its name on the server and its perfplan name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Family {
    pub source: &'static str,
    pub name: &'static str,
    pub kind: Kind,
    pub fold: Fold,
}

const fn f(source: &'static str, name: &'static str, kind: Kind, fold: Fold) -> Family {
    Family {
        source,
        name,
        kind,
        fold,
    }
}

use Fold::{Mean, Sum};
use Kind::{Counter, Gauge, Histogram};

/// Requests in the running batch.
pub(crate) const RUNNING: &str = "running";
/// Requests waiting for a batch slot.
pub(crate) const WAITING: &str = "waiting";
/// KV-cache use, a fraction 0..1.
pub(crate) const KV_CACHE_USAGE: &str = "kv_cache_usage";
pub(crate) const PREEMPTIONS: &str = "preemptions_total";
pub(crate) const SPEC_ACCEPTED: &str = "spec_decode_accepted_tokens_total";
pub(crate) const SPEC_DRAFT: &str = "spec_decode_draft_tokens_total";
/// DCGM GPU utilisation, percent (mean over GPUs).
pub(crate) const GPU_UTIL: &str = "gpu_utilization_percent";
/// DCGM power draw, watts (summed over GPUs).
pub(crate) const GPU_POWER: &str = "gpu_power_w";
/// DCGM energy since boot, millijoules (summed over GPUs).
pub(crate) const GPU_ENERGY: &str = "gpu_energy_mj_total";
pub(crate) const SERVER_TTFT: &str = "server_ttft_seconds";
pub(crate) const SERVER_ITL: &str = "server_itl_seconds";
pub(crate) const SERVER_LATENCY: &str = "server_latency_seconds";
pub(crate) const SERVER_QUEUE: &str = "server_queue_seconds";

/// Every known family, alternatives of one name in order of preference.
pub(crate) const FAMILIES: &[Family] = &[
    f("vllm:num_requests_running", RUNNING, Gauge, Sum),
    f("sglang:num_running_reqs", RUNNING, Gauge, Sum),
    f("tgi_batch_current_size", RUNNING, Gauge, Sum),
    f("llamacpp:requests_processing", RUNNING, Gauge, Sum),
    f("vllm:num_requests_waiting", WAITING, Gauge, Sum),
    f("sglang:num_queue_reqs", WAITING, Gauge, Sum),
    f("tgi_queue_size", WAITING, Gauge, Sum),
    f("llamacpp:requests_deferred", WAITING, Gauge, Sum),
    f("vllm:kv_cache_usage_perc", KV_CACHE_USAGE, Gauge, Mean),
    f("vllm:gpu_cache_usage_perc", KV_CACHE_USAGE, Gauge, Mean),
    f("sglang:token_usage", KV_CACHE_USAGE, Gauge, Mean),
    f("llamacpp:kv_cache_usage_ratio", KV_CACHE_USAGE, Gauge, Mean),
    f("vllm:num_preemptions_total", PREEMPTIONS, Counter, Sum),
    f(
        "vllm:prefix_cache_queries_total",
        "prefix_cache_queries_total",
        Counter,
        Sum,
    ),
    f(
        "vllm:prefix_cache_hits_total",
        "prefix_cache_hits_total",
        Counter,
        Sum,
    ),
    f(
        "sglang:cached_tokens_total",
        "prefix_cache_hits_total",
        Counter,
        Sum,
    ),
    f(
        "vllm:prompt_tokens_total",
        "prompt_tokens_total",
        Counter,
        Sum,
    ),
    f(
        "sglang:prompt_tokens_total",
        "prompt_tokens_total",
        Counter,
        Sum,
    ),
    f(
        "llamacpp:prompt_tokens_total",
        "prompt_tokens_total",
        Counter,
        Sum,
    ),
    f(
        "vllm:generation_tokens_total",
        "generation_tokens_total",
        Counter,
        Sum,
    ),
    f(
        "sglang:generation_tokens_total",
        "generation_tokens_total",
        Counter,
        Sum,
    ),
    f(
        "llamacpp:tokens_predicted_total",
        "generation_tokens_total",
        Counter,
        Sum,
    ),
    f(
        "vllm:prompt_tokens_cached_total",
        "prompt_tokens_cached_total",
        Counter,
        Sum,
    ),
    f(
        "vllm:request_success_total",
        "requests_finished_total",
        Counter,
        Sum,
    ),
    f(
        "tgi_request_success",
        "requests_finished_total",
        Counter,
        Sum,
    ),
    // TGI counts tokens only per request, in histograms (their `_sum` is the total).
    f(
        "tgi_request_input_length",
        "server_input_tokens",
        Histogram,
        Sum,
    ),
    f(
        "tgi_request_generated_tokens",
        "server_generated_tokens",
        Histogram,
        Sum,
    ),
    f(
        "sglang:num_requests_total",
        "requests_finished_total",
        Counter,
        Sum,
    ),
    f(
        "vllm:spec_decode_num_accepted_tokens_total",
        SPEC_ACCEPTED,
        Counter,
        Sum,
    ),
    f(
        "vllm:spec_decode_num_draft_tokens_total",
        SPEC_DRAFT,
        Counter,
        Sum,
    ),
    f(
        "vllm:time_to_first_token_seconds",
        SERVER_TTFT,
        Histogram,
        Sum,
    ),
    f(
        "sglang:time_to_first_token_seconds",
        SERVER_TTFT,
        Histogram,
        Sum,
    ),
    f(
        "vllm:inter_token_latency_seconds",
        SERVER_ITL,
        Histogram,
        Sum,
    ),
    f(
        "vllm:time_per_output_token_seconds",
        SERVER_ITL,
        Histogram,
        Sum,
    ),
    f(
        "sglang:inter_token_latency_seconds",
        SERVER_ITL,
        Histogram,
        Sum,
    ),
    f(
        "sglang:time_per_output_token_seconds",
        SERVER_ITL,
        Histogram,
        Sum,
    ),
    f(
        "tgi_request_mean_time_per_token_duration",
        SERVER_ITL,
        Histogram,
        Sum,
    ),
    f(
        "vllm:e2e_request_latency_seconds",
        SERVER_LATENCY,
        Histogram,
        Sum,
    ),
    f(
        "sglang:e2e_request_latency_seconds",
        SERVER_LATENCY,
        Histogram,
        Sum,
    ),
    f("tgi_request_duration", SERVER_LATENCY, Histogram, Sum),
    f(
        "vllm:request_queue_time_seconds",
        SERVER_QUEUE,
        Histogram,
        Sum,
    ),
    f("sglang:queue_time_seconds", SERVER_QUEUE, Histogram, Sum),
    f("tgi_request_queue_duration", SERVER_QUEUE, Histogram, Sum),
    f("DCGM_FI_DEV_GPU_UTIL", GPU_UTIL, Gauge, Mean),
    f("DCGM_FI_DEV_FB_USED", "gpu_memory_used_mib", Gauge, Sum),
    f("DCGM_FI_DEV_POWER_USAGE", GPU_POWER, Gauge, Sum),
    f(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        GPU_ENERGY,
        Counter,
        Sum,
    ),
];

/// The known family a sample line belongs to, and which part of it the line is
/// (`""`, `"_bucket"`, `"_sum"`, `"_count"`).
pub(crate) fn family_of(sample_name: &str) -> Option<(&'static Family, &'static str)> {
    FAMILIES.iter().find_map(|fam| match fam.kind {
        Kind::Histogram => ["_bucket", "_sum", "_count"].into_iter().find_map(|part| {
            (sample_name.strip_suffix(part)? == fam.source).then_some((fam, part))
        }),
        _ => (sample_name == fam.source).then_some((fam, "")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_find_their_family_and_part() {
        let (fam, part) = family_of("vllm:time_to_first_token_seconds_bucket")
            .unwrap_or_else(|| panic!("bucket line not found"));
        assert_eq!((fam.name, part), (SERVER_TTFT, "_bucket"));
        let (fam, part) = family_of("tgi_request_duration_count").unwrap_or_else(|| panic!());
        assert_eq!((fam.name, part), (SERVER_LATENCY, "_count"));
        assert_eq!(
            family_of("vllm:num_requests_waiting").map(|f| f.0.name),
            Some(WAITING)
        );
        assert!(family_of("vllm:num_requests_waiting_bucket").is_none());
        assert!(family_of("process_cpu_seconds_total").is_none());
        assert!(family_of("vllm:time_per_output_token_seconds_sum").is_some());
    }
}
