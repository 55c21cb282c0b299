//! `GET /metrics`: Prometheus text with vLLM's metric names, so that tools reading a vLLM
//! server's counters read the simulator's the same way. `vllm:prefix_cache_queries_total`
//! and `vllm:prefix_cache_hits_total` count prompt tokens (as vLLM v1 does), so they equal
//! the sums of `usage.prompt_tokens` and `usage.prompt_tokens_details.cached_tokens` of the
//! requests admitted. Gauges of the batch (`num_requests_running`, `num_requests_waiting`)
//! and of the KV-cache blocks running sequences hold (`kv_cache_usage_perc`, 0..1, as
//! vLLM counts it: a finished request's blocks kept for prefix reuse are free), preemptions (the
//! simulator never preempts: 0), and the latency histograms of `histograms`, fed from its
//! ground truth, so a client reading them reads real numbers. Knows nothing about routing.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::state::SimState;

/// The exposition text.
pub(crate) fn render(st: &SimState) -> String {
    let model = st
        .cfg
        .models
        .first()
        .map_or("sim-model", String::as_str)
        .replace(['\\', '"'], "_");
    let c = &st.counters;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let rows: [(&str, &str, &str, u64); 8] = [
        (
            "vllm:num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            st.running(),
        ),
        (
            "vllm:num_requests_waiting",
            "gauge",
            "Number of requests waiting to be processed.",
            st.waiting.load(Ordering::Relaxed),
        ),
        (
            "vllm:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            load(&c.prompt_tokens),
        ),
        (
            "vllm:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            load(&c.generation_tokens),
        ),
        (
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in terms of number of queried tokens.",
            load(&c.cache_queries),
        ),
        (
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in terms of number of cached tokens.",
            load(&c.cache_hits),
        ),
        (
            "vllm:num_preemptions_total",
            "counter",
            "Cumulative number of preemption from the engine.",
            0,
        ),
        (
            "vllm:request_success_total",
            "counter",
            "Count of successfully processed requests.",
            load(&c.requests_ok),
        ),
    ];
    let mut out = String::with_capacity(8192);
    for (name, kind, help, value) in rows {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name}{{model_name=\"{model}\"}} {value}.0");
    }
    let kv = "vllm:kv_cache_usage_perc";
    let _ = writeln!(
        out,
        "# HELP {kv} KV-cache usage. 1 means 100 percent usage."
    );
    let _ = writeln!(out, "# TYPE {kv} gauge");
    let _ = writeln!(out, "{kv}{{model_name=\"{model}\"}} {:?}", st.kv_usage());
    st.histograms.render(&mut out, &model);
    out
}
