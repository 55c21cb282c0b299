//! `GET /metrics`: Prometheus text with vLLM's metric names, so that tools reading a vLLM
//! server's counters read the simulator's the same way. `vllm:prefix_cache_queries_total`
//! and `vllm:prefix_cache_hits_total` count prompt tokens (as vLLM v1 does), so they equal
//! the sums of `usage.prompt_tokens` and `usage.prompt_tokens_details.cached_tokens` of the
//! requests admitted. Gauges of the batch (`num_requests_running`, `num_requests_waiting`)
//! and of the KV-cache blocks running sequences hold (`kv_cache_usage_perc`, 0..1, as
//! vLLM counts it: a finished request's blocks kept for prefix reuse are free), preemptions (the
//! simulator never preempts: 0), and the latency histograms of `histograms`, fed from its
//! ground truth, so a client reading them reads real numbers. `vllm:prompt_tokens_cached_total`
//! counts the cached prompt tokens of the requests admitted (the sum of their
//! `cached_tokens`), and `vllm:cache_config_info` names the cache's `block_size` in a
//! label, as vLLM does. Knows nothing about HTTP routing.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::histograms::Histograms;
use super::state::SimState;

/// The exposition text of a simulator's workers: with one, vLLM's series as they are;
/// with several, one series per worker labelled `engine="K"` (as vLLM's data-parallel
/// engines are), so a reader summing a family's series (perfplan's telemetry, a
/// Prometheus `sum`) reads the whole simulator's counters.
pub(crate) fn render(workers: &[Arc<SimState>]) -> String {
    let Some(first) = workers.first() else {
        return String::new();
    };
    let model = first
        .cfg
        .models
        .first()
        .map_or("sim-model", String::as_str)
        .replace(['\\', '"'], "_");
    let labels: Vec<String> = match workers.len() {
        1 => vec![format!("model_name=\"{model}\"")],
        _ => (0..workers.len())
            .map(|k| format!("engine=\"{k}\",model_name=\"{model}\""))
            .collect(),
    };
    let mut out = String::with_capacity(8192 * workers.len());
    for (name, kind, help, value) in FAMILIES {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (st, labels) in workers.iter().zip(&labels) {
            let _ = writeln!(out, "{name}{{{labels}}} {}.0", value(st));
        }
    }
    let info = "vllm:cache_config_info";
    let _ = writeln!(
        out,
        "# HELP {info} Information of the LLMEngine CacheConfig"
    );
    let _ = writeln!(out, "# TYPE {info} gauge");
    for (st, labels) in workers.iter().zip(&labels) {
        let block = st.cfg.block_size;
        let caching = if st.cfg.prefix_cache { "True" } else { "False" };
        let _ = writeln!(
            out,
            "{info}{{block_size=\"{block}\",enable_prefix_caching=\"{caching}\",{labels}}} 1.0"
        );
    }
    let kv = "vllm:kv_cache_usage_perc";
    let _ = writeln!(
        out,
        "# HELP {kv} KV-cache usage. 1 means 100 percent usage."
    );
    let _ = writeln!(out, "# TYPE {kv} gauge");
    for (st, labels) in workers.iter().zip(&labels) {
        let _ = writeln!(out, "{kv}{{{labels}}} {:?}", st.kv_usage());
    }
    let histograms: Vec<(&Histograms, &str)> = workers
        .iter()
        .zip(&labels)
        .map(|(st, l)| (&st.histograms, l.as_str()))
        .collect();
    Histograms::render_all(&mut out, &histograms);
    out
}

type Family = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SimState) -> u64,
);

fn load(a: &std::sync::atomic::AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

/// The gauges and counters: name, type, help, and a worker's value.
const FAMILIES: [Family; 9] = [
    (
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        |st| st.running(),
    ),
    (
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        |st| load(&st.waiting),
    ),
    (
        "vllm:prompt_tokens_total",
        "counter",
        "Number of prefill tokens processed.",
        |st| load(&st.counters.prompt_tokens),
    ),
    (
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        |st| load(&st.counters.generation_tokens),
    ),
    (
        "vllm:prefix_cache_queries_total",
        "counter",
        "Prefix cache queries, in terms of number of queried tokens.",
        |st| load(&st.counters.cache_queries),
    ),
    (
        "vllm:prefix_cache_hits_total",
        "counter",
        "Prefix cache hits, in terms of number of cached tokens.",
        |st| load(&st.counters.cache_hits),
    ),
    (
        "vllm:prompt_tokens_cached_total",
        "counter",
        "Number of cached prompt tokens (local prefix cache).",
        |st| load(&st.counters.cache_hits),
    ),
    (
        "vllm:num_preemptions_total",
        "counter",
        "Cumulative number of preemption from the engine.",
        |_| 0,
    ),
    (
        "vllm:request_success_total",
        "counter",
        "Count of successfully processed requests.",
        |st| load(&st.counters.requests_ok),
    ),
];
