//! Metric presets: a name standing for a set of metrics and the way a report shows them.
//! `[report] metrics = "evalscope"` (and `perfplan report --metrics evalscope`) prints
//! EvalScope perf's summary per run (`report::evalscope`). Knows nothing about output.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A named report preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// EvalScope perf's "Benchmarking summary" and "Percentile results" per run.
    Evalscope,
}

/// The statistics of EvalScope's percentile table that perfplan measures (EvalScope also
/// prints p66, p80 and p98, which are not in perfplan's statistics).
pub(crate) const EVALSCOPE_PERCENTILES: [&str; 7] =
    ["p10", "p25", "p50", "p75", "p90", "p95", "p99"];

/// The quantities of EvalScope's percentile table, with its column titles: (quantity,
/// title, shown in seconds).
pub(crate) const EVALSCOPE_COLUMNS: [(&str, &str, bool); 7] = [
    ("ttft", "TTFT (s)", true),
    ("itl", "ITL (s)", true),
    ("tpot", "TPOT (s)", true),
    ("latency", "Latency (s)", true),
    ("input_tokens", "Input tokens", false),
    ("output_tokens", "Output tokens", false),
    ("request_output_tps", "Output (tok/s)", false),
];

impl Preset {
    /// Every preset's name, for messages.
    pub const NAMES: [&'static str; 1] = ["evalscope"];

    /// The preset a name stands for.
    pub fn parse(name: &str) -> Option<Preset> {
        match name {
            "evalscope" => Some(Preset::Evalscope),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Preset::Evalscope => "evalscope",
        }
    }

    /// The metrics the preset shows where a report has columns of metrics (the HTML
    /// page's pivot, `--by-class`): EvalScope's summary lines in its order.
    pub fn metrics(self) -> &'static [&'static str] {
        match self {
            Preset::Evalscope => &[
                "requests_ok",
                "requests_failed",
                "rps",
                "output_tps",
                "total_tps",
                "latency_mean",
                "ttft_mean",
                "tpot_mean",
                "itl_mean",
                "input_tokens_mean",
                "output_tokens_mean",
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::names::is_metric;

    #[test]
    fn a_preset_names_metrics_of_the_vocabulary() {
        for name in Preset::NAMES {
            let p = Preset::parse(name).unwrap_or(Preset::Evalscope);
            assert_eq!(p.name(), name);
            assert!(p.metrics().iter().all(|m| is_metric(m)));
        }
        for (q, _, _) in EVALSCOPE_COLUMNS {
            for s in EVALSCOPE_PERCENTILES {
                assert!(is_metric(&format!("{q}_{s}")), "{q}_{s}");
            }
        }
    }
}
