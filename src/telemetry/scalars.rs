//! A run's telemetry scalars (`names::SERVER_SCALARS`, the book, metrics/telemetry.md)
//! from what the sampler kept of each URL: its first and last scrape and its gauges' running mean and
//! peak. Histogram quantiles come from the buckets' increase between the first and the
//! last scrape (`stats::histogram_quantile`); counters from their increase; a counter that
//! went backwards (a restarted server) gives no value. Pure arithmetic.

use std::collections::BTreeMap;

use super::families::{self as fam};
use super::frame::Frame;
use crate::metrics::stats::histogram_quantile;

/// The telemetry scalars: `metrics::names::SERVER_SCALARS`, the one list.
pub use crate::metrics::names::SERVER_SCALARS as SCALAR_NAMES;

/// Mean and peak of one gauge over a run's scrapes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GaugeStats {
    pub sum: f64,
    pub n: u64,
    pub max: f64,
}

impl GaugeStats {
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// The gauges whose mean and peak are reported.
const TRACKED: [&str; 5] = [
    fam::RUNNING,
    fam::WAITING,
    fam::KV_CACHE_USAGE,
    fam::GPU_UTIL,
    fam::GPU_POWER,
];

/// Running plus waiting requests at one scrape (the gauges' sum), tracked like a gauge.
pub(crate) const IN_FLIGHT: &str = "in_flight";

/// What the sampler keeps of one URL's scrapes (bounded: two frames and a few gauges).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UrlTally {
    /// The first and the last scrape, with their times (ms).
    pub first: Option<(i64, Frame)>,
    pub last: Option<(i64, Frame)>,
    pub gauges: BTreeMap<&'static str, GaugeStats>,
}

impl UrlTally {
    /// Counts one successful scrape taken at `t_ms`.
    pub fn add(&mut self, t_ms: i64, frame: Frame) {
        let in_flight = super::counts::in_flight_of(&frame);
        let values = TRACKED.map(|name| (name, frame.value(name)));
        for (name, value) in values.into_iter().chain([(IN_FLIGHT, in_flight)]) {
            if let Some(v) = value {
                let g = self.gauges.entry(name).or_default();
                g.max = if g.n == 0 { v } else { g.max.max(v) };
                g.sum += v;
                g.n += 1;
            }
        }
        if self.first.is_none() {
            self.first = Some((t_ms, frame));
        } else {
            self.last = Some((t_ms, frame));
        }
    }

    /// The increase of a counter between the first and the last scrape.
    fn increase(&self, name: &str) -> Option<f64> {
        let (_, first) = self.first.as_ref()?;
        let (_, last) = self.last.as_ref()?;
        let d = last.value(name)? - first.value(name)?;
        (d >= 0.0).then_some(d)
    }

    /// The `q` quantile of a histogram's observations between the first and last scrape.
    fn quantile(&self, histogram: &str, q: f64) -> Option<f64> {
        let (_, first) = self.first.as_ref()?;
        let (_, last) = self.last.as_ref()?;
        let before: BTreeMap<u64, f64> = first
            .buckets(histogram)
            .into_iter()
            .map(|(le, c)| (le.to_bits(), c))
            .collect();
        let mut delta = Vec::new();
        for (le, c) in last.buckets(histogram) {
            let d = c - before.get(&le.to_bits()).copied().unwrap_or(0.0);
            if d < 0.0 {
                return None;
            }
            delta.push((le, d));
        }
        histogram_quantile(&delta, q)
    }

    /// Seconds between the first and the last scrape.
    fn span_s(&self) -> Option<f64> {
        let d = self.last.as_ref()?.0 - self.first.as_ref()?.0;
        (d > 0).then(|| d as f64 / 1000.0)
    }
}

/// The run's telemetry scalars: each from the first URL that has it; `None` when none has.
/// `client_output_tokens`: the run's output tokens as the client counted them, for the
/// energy per token when the server counts no generated tokens.
pub fn scalars(
    tallies: &[UrlTally],
    client_output_tokens: Option<f64>,
) -> BTreeMap<&'static str, Option<f64>> {
    let first = |f: &dyn Fn(&UrlTally) -> Option<f64>| tallies.iter().find_map(f);
    let gauge = |name: &str, mean: bool| {
        first(&|t: &UrlTally| {
            let g = t.gauges.get(name)?;
            if mean {
                g.mean()
            } else {
                Some(g.max)
            }
        })
    };
    let ms = |h: &str, q: f64| first(&|t: &UrlTally| t.quantile(h, q)).map(|s| s * 1000.0);
    let mut out: BTreeMap<&'static str, Option<f64>> = BTreeMap::new();
    for (p50, p99, h) in [
        ("server_ttft_p50", "server_ttft_p99", fam::SERVER_TTFT),
        ("server_itl_p50", "server_itl_p99", fam::SERVER_ITL),
        (
            "server_latency_p50",
            "server_latency_p99",
            fam::SERVER_LATENCY,
        ),
    ] {
        out.insert(p50, ms(h, 0.5));
        out.insert(p99, ms(h, 0.99));
    }
    out.insert("kv_cache_usage_mean", gauge(fam::KV_CACHE_USAGE, true));
    out.insert("kv_cache_usage_max", gauge(fam::KV_CACHE_USAGE, false));
    out.insert("queue_depth_mean", gauge(fam::WAITING, true));
    out.insert("queue_depth_max", gauge(fam::WAITING, false));
    out.insert("running_mean", gauge(fam::RUNNING, true));
    out.insert("running_max", gauge(fam::RUNNING, false));
    out.insert(
        "preemptions",
        first(&|t: &UrlTally| t.increase(fam::PREEMPTIONS)),
    );
    out.insert(
        "spec_decode_acceptance",
        first(&|t: &UrlTally| {
            let draft = t.increase(fam::SPEC_DRAFT)?;
            (draft > 0.0).then_some(t.increase(fam::SPEC_ACCEPTED)? / draft)
        }),
    );
    out.insert(
        "gpu_utilization_mean",
        gauge(fam::GPU_UTIL, true).map(|p| p / 100.0),
    );
    out.insert("gpu_power_w_mean", gauge(fam::GPU_POWER, true));
    let tokens = first(&|t: &UrlTally| t.increase("generation_tokens_total"))
        .filter(|n| *n > 0.0)
        .or(client_output_tokens.filter(|n| *n > 0.0));
    let joules =
        first(&|t: &UrlTally| t.increase(fam::GPU_ENERGY).map(|mj| mj / 1000.0)).or_else(|| {
            first(&|t: &UrlTally| Some(t.gauges.get(fam::GPU_POWER)?.mean()? * t.span_s()?))
        });
    out.insert(
        "energy_j_per_output_token",
        joules.zip(tokens).map(|(j, n)| j / n),
    );
    out.insert(
        "output_tokens_per_joule",
        joules.filter(|j| *j > 0.0).zip(tokens).map(|(j, n)| n / j),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::frame::frame;

    #[test]
    fn scalars_from_first_and_last_scrape() {
        let mut t = UrlTally::default();
        t.add(
            -3,
            frame(
                "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.1\n\
                 vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 5\n\
                 vllm:time_to_first_token_seconds_bucket{le=\"0.5\"} 5\n\
                 vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 5\n\
                 vllm:num_preemptions_total 2\nvllm:generation_tokens_total 100\n\
                 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 1000000\n",
            ),
        );
        t.add(
            997,
            frame("vllm:num_requests_waiting 4\nvllm:kv_cache_usage_perc 0.5\n"),
        );
        t.add(
            1997,
            frame(
                "vllm:num_requests_waiting 2\nvllm:kv_cache_usage_perc 0.3\n\
                 vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 7\n\
                 vllm:time_to_first_token_seconds_bucket{le=\"0.5\"} 15\n\
                 vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 15\n\
                 vllm:num_preemptions_total 5\nvllm:generation_tokens_total 600\n\
                 DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 1250000\n",
            ),
        );
        assert_eq!(
            t.gauges[IN_FLIGHT].max, 4.0,
            "running and waiting at one scrape"
        );
        let s = scalars(&[t], None);
        assert!(SCALAR_NAMES.iter().all(|n| s.contains_key(n)));
        assert!(SCALAR_NAMES
            .iter()
            .all(|n| crate::metrics::names::is_metric(n)));
        // 10 new observations: 2 in (0, 0.1], 8 in (0.1, 0.5]; rank 5 is 3/8 into the second.
        let p50 = s["server_ttft_p50"].unwrap();
        assert!((p50 - (100.0 + 400.0 * 3.0 / 8.0)).abs() < 1e-9, "{p50}");
        assert_eq!(s["queue_depth_mean"], Some(2.0));
        assert_eq!(s["queue_depth_max"], Some(4.0));
        assert!((s["kv_cache_usage_mean"].unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(s["kv_cache_usage_max"], Some(0.5));
        assert_eq!(s["preemptions"], Some(3.0));
        // 250 J over 500 generated tokens.
        assert_eq!(s["energy_j_per_output_token"], Some(0.5));
        assert_eq!(s["output_tokens_per_joule"], Some(2.0));
        assert_eq!(s["running_mean"], None);
        assert_eq!(s["server_itl_p50"], None);
        assert_eq!(s["spec_decode_acceptance"], None);
    }

    #[test]
    fn power_times_span_without_an_energy_counter() {
        let mut t = UrlTally::default();
        t.add(0, frame("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 100\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 200\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 50\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 70\n"));
        t.add(
            2000,
            frame(
                "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 100\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 200\n",
            ),
        );
        let s = scalars(&[t], Some(600.0));
        assert_eq!(s["gpu_power_w_mean"], Some(300.0));
        assert!((s["gpu_utilization_mean"].unwrap() - 0.6).abs() < 1e-12);
        // 300 W for 2 s over 600 tokens the client counted.
        assert_eq!(s["energy_j_per_output_token"], Some(1.0));
        assert_eq!(s["output_tokens_per_joule"], Some(1.0));
    }
}
