//! The checks of `stop_when` and `on_saturation` on a load (the rule they name is
//! `metrics::saturation`'s; the suite applies it). Knows the load as written.

use crate::plan::LoadSpec;

/// `stop_when` and `on_saturation` where they mean nothing: an exploring load has its
/// own saturation rule, a search its own probes, and `skip_higher` needs a fixed
/// `concurrency` or `rate` to compare tiers by.
pub(crate) fn saturation_problems(load: &LoadSpec) -> Vec<String> {
    let mut out = Vec::new();
    if load.stop_when.is_some() {
        if load.explore.is_some() {
            out.push("`stop_when` does not apply to an exploring load: it stops at saturation by its own rule (`min_gain`, `ttft_factor`, `max_failures`)".to_string());
        }
        if load.search.is_some() {
            out.push(
                "`stop_when` does not apply to an SLA search: its probes are judged by `slo`"
                    .to_string(),
            );
        }
    }
    if load.on_saturation.is_some() {
        if load.stop_when.is_none() {
            out.push("`on_saturation` needs `stop_when = \"saturated\"` (a run must stop on saturation for higher tiers to be skipped)".to_string());
        }
        let fixed = load.ramp.is_none() && load.concurrency_ramp.is_none();
        if !fixed || (load.concurrency.is_none() && load.rate.is_none()) {
            out.push("`on_saturation` needs a fixed `concurrency` or `rate` to tell the higher tiers by (not a ramp)".to_string());
        }
    }
    out
}

/// A run's tier for `on_saturation = "skip_higher"`: its settings but the load (and
/// repeat), whether it is a closed loop, and its level.
#[derive(Debug, Clone, PartialEq)]
pub struct Tier {
    pub key: String,
    pub closed: bool,
    pub level: f64,
}

impl super::RunSpec {
    /// The run's tier; none for a load with no fixed level (a ramp, a trace, a search).
    pub fn tier(&self) -> Option<Tier> {
        let (closed, level) = match self.load.mode {
            super::Load::Closed { concurrency } => (true, f64::from(concurrency)),
            super::Load::Open { rate, .. } => (false, rate),
            _ => return None,
        };
        let mut value = serde_json::to_value(&self.settings).ok()?;
        if let serde_json::Value::Object(map) = &mut value {
            map.remove("load");
            map.remove("repeat");
        }
        Some(Tier {
            key: super::canonical_json(&value),
            closed,
            level,
        })
    }
}
