//! How numbers are shown to people: one display unit per metric column (ms or s,
//! %, tok/s, req/s) and a precision that keeps about four significant digits.

use crate::metrics::registry::{unit_of, MetricUnit};

/// The unit a column is shown in, and how to get there from the stored unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Display {
    pub suffix: &'static str,
    pub scale: f64,
}

/// Chooses the display unit of `metric` for a column holding `values`.
/// Each of `metrics` with its display, chosen for the values `values_of` gives it (the
/// one rule of a table's columns: a unit every value of the column reads well in).
pub(crate) fn displays_of<'m>(
    metrics: &[&'m str],
    values_of: impl Fn(&str) -> Vec<f64>,
) -> Vec<(&'m str, Display)> {
    metrics
        .iter()
        .map(|m| (*m, display_for(m, &values_of(m))))
        .collect()
}

pub(crate) fn display_for(metric: &str, values: &[f64]) -> Display {
    let max = values.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let (suffix, scale) = match unit_of(metric) {
        Some(MetricUnit::Millis) if max >= 10_000.0 => ("s", 1e-3),
        Some(MetricUnit::Millis) => ("ms", 1.0),
        Some(MetricUnit::Seconds) => ("s", 1.0),
        Some(MetricUnit::Ratio) => ("%", 100.0),
        Some(MetricUnit::Tokens) => ("tok", 1.0),
        Some(MetricUnit::TokensPerSec) => ("tok/s", 1.0),
        Some(MetricUnit::RequestsPerSec) => ("req/s", 1.0),
        Some(MetricUnit::Watts) => ("W", 1.0),
        Some(MetricUnit::JoulesPerToken) => ("J/tok", 1.0),
        Some(MetricUnit::TokensPerJoule) => ("tok/J", 1.0),
        Some(MetricUnit::CostPerMillionTokens) => ("/Mtok", 1.0),
        Some(MetricUnit::Count) | None => ("", 1.0),
    };
    Display { suffix, scale }
}

impl Display {
    /// `ttft_p50 (ms)`.
    pub fn header(&self, metric: &str) -> String {
        if self.suffix.is_empty() {
            metric.to_string()
        } else {
            format!("{metric} ({})", self.suffix)
        }
    }

    pub fn value(&self, v: f64) -> String {
        let x = v * self.scale;
        if self.suffix == "%" {
            return format!("{x:.2}");
        }
        number(x)
    }

    /// `12.5 ms`, `99.90%`, `42`.
    pub(crate) fn with_unit(&self, v: f64) -> String {
        match self.suffix {
            "" => self.value(v),
            "%" => format!("{}%", self.value(v)),
            unit => format!("{} {unit}", self.value(v)),
        }
    }
}

/// About four significant digits, no exponent.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let decimals = decimals_for(x.abs());
    format!("{x:.decimals$}")
}

/// A level a plan names (a rate of 0.5 or 2.25 req/s, a concurrency): as written, when it
/// has at most three decimals (`0.5`, not `0.5000`); any other value as [`number`].
pub fn setting(x: f64) -> String {
    let thousandths = (x * 1000.0).round();
    if x.is_finite() && x.abs() < 1e12 && (x * 1000.0 - thousandths).abs() < 1e-6 {
        return format!("{}", thousandths / 1000.0);
    }
    number(x)
}

/// Decimals `number` shows for a value of magnitude `a` (not a whole number).
fn decimals_for(a: f64) -> usize {
    if a >= 1000.0 {
        0
    } else if a >= 100.0 {
        1
    } else if a >= 10.0 {
        2
    } else if a >= 1.0 {
        3
    } else if a > 0.0 {
        (3 - a.log10().floor() as i32).clamp(3, 9) as usize
    } else {
        3
    }
}

/// A signed difference shown with the precision of the values it is the difference of
/// (`12.35` and `12.44` ms give `+0.10`, not `+0.09954`), in `disp`'s unit.
pub(crate) fn delta_text(disp: &Display, delta: f64, values: &[Option<f64>]) -> String {
    let known: Vec<f64> = values.iter().flatten().map(|v| v * disp.scale).collect();
    let decimals = if disp.suffix == "%" {
        2
    } else if !known.is_empty() && known.iter().all(|v| *v == v.trunc()) {
        0
    } else {
        decimals_for(known.iter().fold(0.0_f64, |m, v| m.max(v.abs())))
    };
    let x = delta * disp.scale;
    let text = format!("{x:+.decimals$}");
    // `-0.00` reads as a change; a difference that rounds away is shown as none.
    if text
        .trim_start_matches(['+', '-'])
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        format!("{:.decimals$}", 0.0)
    } else {
        text
    }
}

/// A mean and the half-width of its interval, both to the half-width's precision: its
/// two significant digits (`25.96 ± 0.43`, `1230 ± 230`), as a careful scientist prints
/// them, not the mean's four digits beside a half-width that makes two of them noise. A
/// half-width of 0 (every repeat alike) leaves the mean as `value` shows it.
pub(crate) fn mean_pm(disp: &Display, mean: f64, half: f64) -> String {
    let (m, h) = (mean * disp.scale, half.abs() * disp.scale);
    if !(h.is_finite() && m.is_finite()) || h == 0.0 {
        return format!("{} ± 0", disp.value(mean));
    }
    // The place of the half-width's second significant digit, after rounding to it
    // (0.0996 rounds to 0.10, whose second digit is one place up).
    let mut place = h.log10().floor() as i32 - 1;
    if (h / 10f64.powi(place)).round() >= 100.0 {
        place += 1;
    }
    let unit = 10f64.powi(place);
    let round = |x: f64| (x / unit).round() * unit;
    let decimals = (-place).max(0) as usize;
    format!("{:.decimals$} ± {:.decimals$}", round(m), round(h))
}

/// A signed relative change: `+12.3%`.
pub(crate) fn percent(x: f64) -> String {
    format!("{x:+.1}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_shown_as_written() {
        assert_eq!(setting(0.5), "0.5");
        assert_eq!(setting(2.25), "2.25");
        assert_eq!(setting(0.07), "0.07");
        assert_eq!(setting(64.0), "64");
        // Not a level a plan names: the usual figures.
        assert_eq!(setting(1.0 / 3.0), number(1.0 / 3.0));
    }

    #[test]
    fn a_mean_is_shown_to_its_half_widths_two_digits() {
        let ms = display_for("ttft_p50", &[25.0]);
        assert_eq!(mean_pm(&ms, 25.9612, 0.4321), "25.96 ± 0.43");
        assert_eq!(mean_pm(&ms, 25.9612, 4.321), "26.0 ± 4.3");
        assert_eq!(mean_pm(&ms, 1234.5, 234.5), "1230 ± 230");
        assert_eq!(mean_pm(&ms, 0.51234, 0.012345), "0.512 ± 0.012");
        assert_eq!(mean_pm(&ms, 2.71234, 0.0996), "2.71 ± 0.10");
        assert_eq!(mean_pm(&ms, 42.0, 0.0), "42 ± 0");
        let pct = display_for("cache_hit_ratio", &[0.5]);
        assert_eq!(mean_pm(&pct, 0.51234, 0.00321), "51.23 ± 0.32");
    }

    #[test]
    fn units_and_precision() {
        assert_eq!(
            display_for("ttft_p50", &[12.0, 9000.0]).header("ttft_p50"),
            "ttft_p50 (ms)"
        );
        let d = display_for("latency_p99", &[12_000.0]);
        assert_eq!((d.suffix, d.value(12_345.0)), ("s", "12.35".to_string()));
        assert_eq!(display_for("success_ratio", &[]).value(0.9995), "99.95");
        assert_eq!(
            display_for("requests_ok", &[]).header("requests_ok"),
            "requests_ok"
        );
        assert_eq!(number(1234.567), "1235");
        assert_eq!(number(3.45678), "3.457");
        assert_eq!(number(0.001234), "0.001234");
        assert_eq!(number(64.0), "64");
        assert_eq!(percent(-5.04), "-5.0%");
        let ms = display_for("ttft_p50", &[12.35, 12.44]);
        assert_eq!(
            delta_text(&ms, 0.09954, &[Some(12.35), Some(12.44)]),
            "+0.10"
        );
        assert_eq!(
            delta_text(&ms, -0.001, &[Some(12.35), Some(12.349)]),
            "0.00"
        );
        let tps = display_for("output_tps", &[]);
        assert_eq!(
            delta_text(&tps, 0.09954, &[Some(0.25), Some(0.35)]),
            "+0.0995"
        );
        assert_eq!(
            delta_text(&tps, 530.4, &[Some(1203.3), Some(1733.7)]),
            "+530"
        );
        let n = display_for("requests_ok", &[]);
        assert_eq!(delta_text(&n, 2.0, &[Some(62.0), Some(64.0)]), "+2");
        let pct = display_for("success_ratio", &[]);
        assert_eq!(
            delta_text(&pct, 0.0005, &[Some(0.999), Some(0.9995)]),
            "+0.05"
        );
    }
}
