//! The smallest change `compare` calls a change. A bootstrap interval sees only the
//! spread within each run, not between runs: two runs of an unchanged suite on one
//! machine differ by a few percent (scheduling, cache state, clocks), and tails by more,
//! so a delta whose interval excludes zero is still "no change" below this size. The
//! defaults, in percent of the base value, by statistic:
//!
//! | statistic | minimum effect |
//! | --- | --- |
//! | `mean`, `p50`, `min`, and scalars (throughputs, ratios) | 5% |
//! | `stdev`, `p1`…`p25`, `p75`, `p90`, `p95` | 10% |
//! | `p99`, `p999`, `max` | 20% |
//!
//! `compare --min-effect METRIC=PCT` (repeatable) sets one metric's.

/// A metric's own minimum effect, `METRIC=PCT` as given to `--min-effect`.
#[derive(Debug, Clone, PartialEq)]
pub struct MinEffect {
    pub metric: String,
    pub pct: f64,
}

/// Why a `--min-effect` could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MinEffectError {
    #[error("--min-effect {0:?}: expected METRIC=PCT, e.g. ttft_p99=15% (or 15)")]
    Form(String),
    #[error("--min-effect {given:?}: {metric:?} is not a metric name{}", hint.as_ref().map_or_else(String::new, |h| format!(" (did you mean {h:?}?)")))]
    Metric {
        given: String,
        metric: String,
        hint: Option<String>,
    },
    #[error("--min-effect {0:?}: the percentage must be a number from 0 to 1000")]
    Pct(String),
}

impl std::str::FromStr for MinEffect {
    type Err = MinEffectError;

    fn from_str(s: &str) -> Result<MinEffect, MinEffectError> {
        let (metric, pct) = s
            .split_once('=')
            .ok_or_else(|| MinEffectError::Form(s.to_string()))?;
        let metric = metric.trim();
        if !crate::metrics::names::is_metric_or_class(metric) {
            let all = crate::metrics::names::all_names();
            let hint = crate::suggest::nearest(metric, all.iter().map(String::as_str));
            return Err(MinEffectError::Metric {
                given: s.to_string(),
                metric: metric.to_string(),
                hint: hint.map(str::to_string),
            });
        }
        let pct = pct.trim();
        let pct: f64 = pct
            .strip_suffix('%')
            .unwrap_or(pct)
            .trim()
            .parse()
            .map_err(|_| MinEffectError::Pct(s.to_string()))?;
        if !(0.0..=1000.0).contains(&pct) {
            return Err(MinEffectError::Pct(s.to_string()));
        }
        Ok(MinEffect {
            metric: metric.to_string(),
            pct,
        })
    }
}

/// The default minimum effect of `metric`, in percent (see the module's table).
pub(crate) fn default_pct(metric: &str) -> f64 {
    // A mix class's metric (`ttft_p99@rag`) has its metric's minimum effect.
    let metric = crate::metrics::names::split_class(metric).0;
    let statistic = metric.rsplit('_').next().unwrap_or("");
    let quantity = metric.strip_suffix(&format!("_{statistic}"));
    let is_distribution = quantity.is_some_and(|q| {
        crate::metrics::names::QUANTITIES.contains(&q)
            && crate::metrics::names::STATISTICS.contains(&statistic)
    });
    if !is_distribution {
        return 5.0;
    }
    match statistic {
        "mean" | "p50" | "min" => 5.0,
        "p99" | "p999" | "max" => 20.0,
        _ => 10.0,
    }
}

/// The minimum effect of `metric`: its `--min-effect`, else the default.
pub(crate) fn pct_for(metric: &str, overrides: &[MinEffect]) -> f64 {
    overrides
        .iter()
        .rev()
        .find(|m| m.metric == metric)
        .map_or_else(|| default_pct(metric), |m| m.pct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_by_statistic() {
        assert_eq!(default_pct("ttft_p50"), 5.0);
        assert_eq!(default_pct("tpot_mean"), 5.0);
        assert_eq!(default_pct("ttft_p90"), 10.0);
        assert_eq!(default_pct("latency_stdev"), 10.0);
        assert_eq!(default_pct("ttft_p99"), 20.0);
        assert_eq!(default_pct("itl_max"), 20.0);
        assert_eq!(default_pct("output_tps"), 5.0);
        assert_eq!(default_pct("success_ratio"), 5.0);
    }

    #[test]
    fn overrides_parse_and_win() {
        let m: MinEffect = "ttft_p99=15%".parse().unwrap();
        assert_eq!(m.pct, 15.0);
        let n: MinEffect = "ttft_p99 = 2.5".parse().unwrap();
        assert_eq!(pct_for("ttft_p99", &[m, n]), 2.5);
        assert_eq!(pct_for("ttft_p50", &[]), 5.0);
        assert!(matches!(
            "ttft_p98=5%".parse::<MinEffect>(),
            Err(MinEffectError::Metric { .. })
        ));
        assert!(matches!(
            "ttft_p99".parse::<MinEffect>(),
            Err(MinEffectError::Form(_))
        ));
        assert!(matches!(
            "ttft_p99=-1%".parse::<MinEffect>(),
            Err(MinEffectError::Pct(_))
        ));
        assert!(matches!(
            "ttft_p99=lots".parse::<MinEffect>(),
            Err(MinEffectError::Pct(_))
        ));
    }
}
