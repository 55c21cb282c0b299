//! A load ramp resolved: the plan's `ramp` table (`plan::RampSpec`) checked and turned
//! into one [`RateCurve`], the rate λ(t) of the run's open loop, with its cumulative
//! count Λ(t) = ∫₀ᵗ λ and the inverse of Λ, from which the suite draws the send times by
//! time-rescaling (`engine::schedule::rescaled`). The curve also cuts the run into its
//! steps, the windows its per-step metrics are read in. Pure: no clock, no I/O.

use std::time::Duration;

use crate::plan::{ranges, Arrivals, LoadSpec, RampShape, RampSpec};

/// The rate of a ramped open loop over time.
#[derive(Debug, Clone, PartialEq)]
pub enum RateCurve {
    /// `rates[k]` req/s from k·`width` to (k + 1)·`width` (seconds).
    Steps { rates: Vec<f64>, width: f64 },
    /// From `from` to `to` req/s in a straight line over `over` seconds; `windows` equal
    /// windows for the per-step metrics (0: none).
    Linear {
        from: f64,
        to: f64,
        over: f64,
        windows: u32,
    },
    /// from · (to / from)^(t / over) req/s over `over` seconds; `windows` as for linear.
    Exponential {
        from: f64,
        to: f64,
        over: f64,
        windows: u32,
    },
}

/// One step of a ramp, a window of its schedule: the planned mean rate inside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampStep {
    pub rate: f64,
    pub start: Duration,
    pub end: Duration,
}

impl RateCurve {
    /// The curve of a ramp that [`ramp_problems`] accepts (`None` otherwise).
    pub fn of(spec: &RampSpec) -> Option<RateCurve> {
        if !ramp_problems(spec).is_empty() {
            return None;
        }
        if !spec.rates.is_empty() {
            let width = spec.step?.0.as_secs_f64();
            return Some(RateCurve::Steps {
                rates: spec.rates.clone(),
                width,
            });
        }
        let (from, to, over) = (spec.from?, spec.to?, spec.over?.0.as_secs_f64());
        let windows = spec.steps.unwrap_or(0);
        Some(match spec.shape.unwrap_or_default() {
            RampShape::Linear => RateCurve::Linear {
                from,
                to,
                over,
                windows,
            },
            RampShape::Exponential => RateCurve::Exponential {
                from,
                to,
                over,
                windows,
            },
            RampShape::Step => {
                let n = windows.max(2);
                let rates = (0..n)
                    .map(|k| from + (to - from) * f64::from(k) / f64::from(n - 1))
                    .collect();
                RateCurve::Steps {
                    rates,
                    width: over / f64::from(n),
                }
            }
        })
    }

    /// How long the ramp lasts, seconds.
    pub fn span(&self) -> f64 {
        match self {
            RateCurve::Steps { rates, width } => rates.len() as f64 * width,
            RateCurve::Linear { over, .. } | RateCurve::Exponential { over, .. } => *over,
        }
    }

    /// Λ(t): arrivals planned from 0 to `t` seconds (t clamped to the ramp).
    pub fn cumulative(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.span());
        match self {
            RateCurve::Steps { rates, width } => {
                let whole = (t / width).floor() as usize;
                let done: f64 = rates.iter().take(whole).sum::<f64>() * width;
                let part = rates
                    .get(whole)
                    .map_or(0.0, |r| r * (t - whole as f64 * width));
                done + part
            }
            RateCurve::Linear { from, to, over, .. } => {
                from * t + (to - from) * t * t / (2.0 * over)
            }
            RateCurve::Exponential { from, to, over, .. } => {
                let k = (to / from).ln() / over;
                if k.abs() < 1e-12 {
                    from * t
                } else {
                    from * ((k * t).exp() - 1.0) / k
                }
            }
        }
    }

    /// The planned arrivals of the whole ramp, Λ(span).
    pub fn total(&self) -> f64 {
        self.cumulative(self.span())
    }

    /// The requests a ramp sends: round(Λ(span)), at least 1.
    pub(crate) fn planned_requests(&self) -> u64 {
        self.total().round().max(1.0) as u64
    }

    /// Λ⁻¹(u): the time by which `u` arrivals are planned (u clamped to [0, total]).
    pub(crate) fn time_of(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, self.total());
        match self {
            RateCurve::Steps { rates, width } => {
                let mut before = 0.0;
                for (k, r) in rates.iter().enumerate() {
                    let mass = r * width;
                    if u <= before + mass {
                        return k as f64 * width + (u - before) / r;
                    }
                    before += mass;
                }
                self.span()
            }
            RateCurve::Linear { from, to, over, .. } => {
                // Root of from·t + a·t² = u, a = (to − from) / (2·over), in the form
                // that stays exact when a is near zero.
                let a = (to - from) / (2.0 * over);
                2.0 * u / (from + (from * from + 4.0 * a * u).max(0.0).sqrt())
            }
            RateCurve::Exponential { from, to, over, .. } => {
                let k = (to / from).ln() / over;
                if k.abs() < 1e-12 {
                    u / from
                } else {
                    (1.0 + k * u / from).max(f64::MIN_POSITIVE).ln() / k
                }
            }
        }
    }

    /// The windows of the per-step metrics: each step of a step curve, or a linear or
    /// exponential ramp cut into its `steps` equal windows (none without `steps`). Each
    /// window's rate is the planned mean inside it.
    pub fn steps(&self) -> Vec<RampStep> {
        let n = match self {
            RateCurve::Steps { rates, .. } => rates.len(),
            RateCurve::Linear { windows, .. } | RateCurve::Exponential { windows, .. } => {
                *windows as usize
            }
        };
        let width = self.span() / n.max(1) as f64;
        (0..n)
            .map(|k| {
                let (a, b) = (k as f64 * width, (k + 1) as f64 * width);
                RampStep {
                    rate: (self.cumulative(b) - self.cumulative(a)) / width,
                    start: crate::units::duration_from_secs(a),
                    end: crate::units::duration_from_secs(b),
                }
            })
            .collect()
    }
}

/// How a ramp's errors name its keys: a rate ramp's or a concurrency ramp's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RampWords {
    /// The load key (`ramp`, `concurrency_ramp`).
    pub key: &'static str,
    /// What it varies (`rate`, `concurrency`), and the series key (`rates`, `concurrencies`).
    pub noun: &'static str,
    pub series: &'static str,
    /// A curve's and a series' values as written in the examples.
    pub example: (&'static str, &'static str),
}

/// A rate ramp's words.
pub(crate) const RATE_WORDS: RampWords = RampWords {
    key: "ramp",
    noun: "rate",
    series: "rates",
    example: ("from = 1, to = 64", "[1, 2, 4]"),
};

/// What is wrong with a rate ramp table itself (its ranges are the schema's, checked before).
pub(crate) fn ramp_problems(spec: &RampSpec) -> Vec<String> {
    let mut out = curve_problems(spec, &RATE_WORDS);
    if let Some(r) = spec
        .rates
        .iter()
        .find(|r| !(ranges::MIN_RATE..=ranges::MAX_RATE).contains(*r))
    {
        out.push(format!(
            "ramp rate {r} is out of range: each rate is from {} to {} req/s",
            ranges::MIN_RATE,
            ranges::MAX_RATE
        ));
    }
    out
}

/// What is wrong with a ramp's curve or series, in the words of its kind (`w`).
pub(crate) fn curve_problems(spec: &RampSpec, w: &RampWords) -> Vec<String> {
    let mut out = Vec::new();
    let RampWords {
        key,
        noun,
        series,
        example: (curve_ex, series_ex),
    } = *w;
    let curve = spec.from.is_some() || spec.to.is_some() || spec.over.is_some();
    if !spec.rates.is_empty() {
        if curve {
            out.push(format!("a {key} is a curve (`from`, `to`, `over`) or a {noun} series (`{series}`, `step`), not both: keep one"));
        }
        if spec.step.is_none() {
            out.push(format!(
                "a {noun} series needs `step`, how long each {noun} is held (like `step = \"10s\"`)"
            ));
        }
        if spec.shape.is_some_and(|s| s != RampShape::Step) || spec.steps.is_some() {
            out.push(format!(
                "a {noun} series is a step shape of its own: drop `shape` and `steps`"
            ));
        }
        if spec.rates.len() > ranges::MAX_RAMP_STEPS as usize {
            out.push(format!(
                "a {noun} series has at most {} {series}, got {}",
                ranges::MAX_RAMP_STEPS,
                spec.rates.len()
            ));
        }
        return out;
    }
    if spec.step.is_some() {
        out.push(format!(
            "`step` belongs to a {noun} series (`{series} = [...]`); a curve's steps are `steps = N`"
        ));
    }
    for (k, set) in [
        ("from", spec.from.is_some()),
        ("to", spec.to.is_some()),
        ("over", spec.over.is_some()),
    ] {
        if !set {
            out.push(format!(
                "a {key} needs `{k}`: write `{key} = {{ {curve_ex}, over = \"60s\" }}` or a {noun} series `{key} = {{ {series} = {series_ex}, step = \"10s\" }}`"
            ));
        }
    }
    if spec.over.is_some_and(|d| d.0.is_zero()) {
        out.push(format!("a {key}'s `over` must be longer than zero"));
    }
    if spec.shape == Some(RampShape::Step) && spec.steps.is_none() {
        out.push(format!(
            "a step {key} needs `steps`, how many {series} from `from` to `to` (at least 2)"
        ));
    }
    out
}

/// What is wrong with a ramp in its load: the keys it cannot go with, and a count of
/// planned arrivals out of range.
pub(crate) fn ramp_load_problems(load: &LoadSpec, spec: &RampSpec) -> Vec<String> {
    let mut out = ramp_problems(spec);
    if load.rate.is_some() || load.concurrency.is_some() {
        out.push("a ramp sets the load's rate over time: drop `rate` and `concurrency`".into());
    }
    if load.search.is_some() {
        out.push("a ramp cannot be searched: an SLA search probes fixed loads".into());
    }
    if load.arrivals == Some(Arrivals::Gamma) {
        out.push("a ramp's arrivals are `poisson` (the default) or `constant`, not `gamma`".into());
    }
    if super::warmup_count(load) > 0 {
        out.push(
            "a ramp has no warmup: its first requests meet the lowest rate (drop `warmup`)".into(),
        );
    }
    if let Some(curve) = RateCurve::of(spec) {
        let n = curve.total();
        if n < 0.5 || n > f64::from(ranges::MAX_REQUESTS) {
            out.push(format!(
                "the ramp plans {n:.1} requests (∫ rate dt): a run sends from 1 to {}",
                ranges::MAX_REQUESTS
            ));
        }
    }
    out
}

/// The step windows of a stored run's load (its settings as the database keeps them);
/// `None` for settings without a ramp or that cannot be read.
pub(crate) fn stored_windows(
    settings: &serde_json::Value,
) -> Option<(Vec<crate::metrics::steps::StepWindow>, &'static str)> {
    let load: LoadSpec = serde_json::from_value(settings.get("load")?.clone()).ok()?;
    // Only a ramp has windows, and a trace never has one: the dataset's kind and the
    // seed change none.
    super::RunLoad::of(&load, crate::plan::DatasetKind::Random, 0).step_windows()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::HumanDuration;

    fn secs(s: f64) -> Option<HumanDuration> {
        Some(HumanDuration(Duration::from_secs_f64(s)))
    }

    fn curve(shape: RampShape, steps: Option<u32>) -> RateCurve {
        RateCurve::of(&RampSpec {
            from: Some(2.0),
            to: Some(32.0),
            over: secs(10.0),
            shape: Some(shape),
            steps,
            ..RampSpec::default()
        })
        .unwrap()
    }

    #[test]
    fn cumulative_counts_match_hand_worked_integrals() {
        // Linear 2 → 32 over 10 s: ∫ = 10 · (2 + 32) / 2 = 170; at 5 s: 2·5 + 30·25/20 = 47.5.
        let lin = curve(RampShape::Linear, None);
        assert!((lin.total() - 170.0).abs() < 1e-9);
        assert!((lin.cumulative(5.0) - 47.5).abs() < 1e-9);
        // Exponential 2 → 32: k = ln 16 / 10, ∫ = 2 (16 − 1) / k = 30 / k.
        let exp = curve(RampShape::Exponential, None);
        let k = 16f64.ln() / 10.0;
        assert!((exp.total() - 30.0 / k).abs() < 1e-9);
        // Steps 2, 12, 22, 32, 2.5 s each: 170 in all, 2·2.5 + 12·1.5 = 23 by 4 s.
        let st = curve(RampShape::Step, Some(4));
        assert!((st.total() - 170.0).abs() < 1e-9);
        assert!((st.cumulative(4.0) - 23.0).abs() < 1e-9);
        assert_eq!(st.planned_requests(), 170);
    }

    #[test]
    fn time_of_inverts_cumulative_on_every_shape() {
        for c in [
            curve(RampShape::Linear, None),
            curve(RampShape::Exponential, None),
            curve(RampShape::Step, Some(5)),
            RateCurve::Linear {
                from: 40.0,
                to: 1.0,
                over: 3.0,
                windows: 0,
            },
            RateCurve::Exponential {
                from: 5.0,
                to: 5.0,
                over: 3.0,
                windows: 0,
            },
        ] {
            for i in 0..=100 {
                let t = c.span() * f64::from(i) / 100.0;
                let back = c.time_of(c.cumulative(t));
                assert!((back - t).abs() < 1e-6, "{c:?} at {t}: {back}");
            }
        }
    }

    #[test]
    fn steps_give_each_window_its_mean_rate() {
        let s = curve(RampShape::Step, Some(4)).steps();
        let rates: Vec<f64> = s.iter().map(|s| s.rate).collect();
        assert_eq!(rates, [2.0, 12.0, 22.0, 32.0]);
        assert_eq!(s[1].start, Duration::from_millis(2500));
        assert_eq!(s[3].end, Duration::from_secs(10));
        let lin = curve(RampShape::Linear, Some(2)).steps();
        // 0–5 s: 47.5 / 5 = 9.5; 5–10 s: (170 − 47.5) / 5 = 24.5.
        assert!((lin[0].rate - 9.5).abs() < 1e-9 && (lin[1].rate - 24.5).abs() < 1e-9);
        assert!(curve(RampShape::Linear, None).steps().is_empty());
    }

    #[test]
    fn bad_ramps_say_what_to_do() {
        let series = RampSpec {
            rates: vec![1.0, 2.0],
            ..RampSpec::default()
        };
        assert!(ramp_problems(&series)[0].contains("needs `step`"));
        let mixed = RampSpec {
            rates: vec![1.0, 0.0],
            step: secs(1.0),
            from: Some(1.0),
            ..RampSpec::default()
        };
        let p = ramp_problems(&mixed).join("\n");
        assert!(p.contains("not both") && p.contains("out of range"), "{p}");
        let step = RampSpec {
            from: Some(1.0),
            to: Some(2.0),
            over: secs(1.0),
            shape: Some(RampShape::Step),
            ..RampSpec::default()
        };
        assert!(ramp_problems(&step)[0].contains("needs `steps`"));
        let half = RampSpec {
            from: Some(1.0),
            ..RampSpec::default()
        };
        let p = ramp_problems(&half).join("\n");
        assert!(
            p.contains("needs `to`") && p.contains("needs `over`"),
            "{p}"
        );
        let load = LoadSpec {
            rate: Some(3.0),
            warmup: Some(crate::plan::WarmupSpec::Count(4)),
            ..LoadSpec::default()
        };
        let p = ramp_load_problems(&load, &step_ok()).join("\n");
        assert!(p.contains("drop `rate`") && p.contains("no warmup"), "{p}");
        let tiny = RampSpec {
            from: Some(0.01),
            to: Some(0.01),
            over: secs(1.0),
            ..RampSpec::default()
        };
        let p = ramp_load_problems(&LoadSpec::default(), &tiny).join("\n");
        assert!(p.contains("plans 0.0 requests"), "{p}");
    }

    fn step_ok() -> RampSpec {
        RampSpec {
            rates: vec![1.0, 2.0],
            step: secs(1.0),
            ..RampSpec::default()
        }
    }
}
