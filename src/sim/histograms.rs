//! The simulator's latency histograms under vLLM's names and bucket bounds (v1's
//! `vllm/v1/metrics/loggers.py`), fed from its own ground truth when a response ends:
//! TTFT (first token − arrival), inter-token latency (each request's mean gap between
//! content chunks, observed once per gap), end-to-end latency (last token − arrival) and
//! queue time (admission − arrival). Only requests answered 200 and finished count, as
//! in vLLM. Knows nothing about HTTP.

use std::fmt::Write;
use std::sync::Mutex;

use super::truth::TruthRecord;

const TTFT_BOUNDS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
const ITL_BOUNDS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
const LATENCY_BOUNDS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// One histogram: a count per bucket (not cumulative; the last is `+Inf`), sum, count.
struct Histogram {
    name: &'static str,
    help: &'static str,
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(name: &'static str, help: &'static str, bounds: &'static [f64]) -> Histogram {
        Histogram {
            name,
            help,
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    fn observe(&mut self, seconds: f64, times: u64) {
        let i = self.bounds.partition_point(|b| *b < seconds);
        self.counts[i] += times;
        self.sum += seconds * times as f64;
        self.count += times;
    }

    fn render_header(&self, out: &mut String) {
        let name = self.name;
        let _ = writeln!(out, "# HELP {name} {}", self.help);
        let _ = writeln!(out, "# TYPE {name} histogram");
    }

    /// The samples, each with `labels` (e.g. `model_name="m"`) after `le`.
    fn render_samples(&self, out: &mut String, labels: &str) {
        let name = self.name;
        let mut cum = 0;
        for (i, c) in self.counts.iter().enumerate() {
            cum += c;
            let le = self
                .bounds
                .get(i)
                .map_or("+Inf".to_string(), |b| format!("{b:?}"));
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\",{labels}}} {cum}.0");
        }
        let _ = writeln!(out, "{name}_sum{{{labels}}} {:?}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}.0", self.count);
    }
}

/// The four histograms.
pub(crate) struct Histograms {
    inner: Mutex<[Histogram; 4]>,
}

impl Default for Histograms {
    fn default() -> Self {
        Histograms {
            inner: Mutex::new([
                Histogram::new(
                    "vllm:time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.",
                    TTFT_BOUNDS,
                ),
                Histogram::new(
                    "vllm:inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.",
                    ITL_BOUNDS,
                ),
                Histogram::new(
                    "vllm:e2e_request_latency_seconds",
                    "Histogram of e2e request latency in seconds.",
                    LATENCY_BOUNDS,
                ),
                Histogram::new(
                    "vllm:request_queue_time_seconds",
                    "Histogram of time spent in WAITING phase for request.",
                    LATENCY_BOUNDS,
                ),
            ]),
        }
    }
}

const US: f64 = 1e-6;

impl Histograms {
    /// Counts a request whose response ended (finished and answered 200 only).
    pub(crate) fn observe(&self, r: &TruthRecord) {
        if !r.finished || r.status != 200 {
            return;
        }
        let mut h = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let since = |t: Option<u64>| t.map(|t| t.saturating_sub(r.arrival_us) as f64 * US);
        if let Some(ttft) = since(r.first_token_us) {
            h[0].observe(ttft, 1);
        }
        if let (Some(first), Some(last)) = (r.first_token_us, r.last_token_us) {
            if r.chunks_sent >= 2 {
                let gaps = r.chunks_sent - 1;
                let mean = last.saturating_sub(first) as f64 * US / gaps as f64;
                h[1].observe(mean, gaps);
            }
        }
        if let Some(e2e) = since(r.last_token_us) {
            h[2].observe(e2e, 1);
        }
        if let Some(queue) = since(r.admitted_us) {
            h[3].observe(queue, 1);
        }
    }

    /// The exposition text of all four, each family's header once and then the samples
    /// of every set (a worker's histograms and its labels).
    pub(crate) fn render_all(out: &mut String, sets: &[(&Histograms, &str)]) {
        let guards: Vec<_> = sets
            .iter()
            .map(|(h, _)| h.inner.lock().unwrap_or_else(|p| p.into_inner()))
            .collect();
        for family in 0..4 {
            if let Some(first) = guards.first() {
                first[family].render_header(out);
            }
            for (g, (_, labels)) in guards.iter().zip(sets) {
                g[family].render_samples(out, labels);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_vllm_buckets() {
        let h = Histograms::default();
        h.observe(&TruthRecord {
            status: 200,
            finished: true,
            arrival_us: 1_000,
            admitted_us: Some(1_000),
            first_token_us: Some(31_000),
            last_token_us: Some(131_000),
            chunks_sent: 11,
            ..TruthRecord::default()
        });
        // Not counted: cut short.
        h.observe(&TruthRecord {
            status: 200,
            first_token_us: Some(5),
            ..TruthRecord::default()
        });
        let mut out = String::new();
        Histograms::render_all(&mut out, &[(&h, "model_name=\"m\"")]);
        // TTFT 30 ms: in (0.02, 0.04].
        assert!(out
            .contains("vllm:time_to_first_token_seconds_bucket{le=\"0.02\",model_name=\"m\"} 0.0"));
        assert!(out
            .contains("vllm:time_to_first_token_seconds_bucket{le=\"0.04\",model_name=\"m\"} 1.0"));
        // Ten gaps of 10 ms: in the first ITL bucket (le 0.01).
        assert!(out.contains(
            "vllm:inter_token_latency_seconds_bucket{le=\"0.01\",model_name=\"m\"} 10.0"
        ));
        assert!(out.contains("vllm:inter_token_latency_seconds_count{model_name=\"m\"} 10.0"));
        assert!(out
            .contains("vllm:e2e_request_latency_seconds_bucket{le=\"0.3\",model_name=\"m\"} 1.0"));
        assert!(
            out.contains("vllm:request_queue_time_seconds_bucket{le=\"0.3\",model_name=\"m\"} 1.0")
        );
        assert!(out
            .contains("vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 1.0"));
    }
}
