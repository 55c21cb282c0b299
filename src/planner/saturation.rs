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
