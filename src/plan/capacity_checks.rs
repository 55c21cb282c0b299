//! Warnings for goodput and capacity metrics a plan names but cannot give: SLO metrics
//! without `[slo]` (every successful request is then good, so `slo_attainment` is
//! `success_ratio`), and per-accelerator or cost metrics where no endpoint has a
//! `hardware` table (they are then null, and a gate on them fails for want of a value).

use super::diag::Diagnostic;
use super::node::{Node, Step};
use super::spec::PlanSpec;
use crate::metrics::names;

/// Metrics that count requests meeting `[slo]`.
const SLO_METRICS: [&str; 5] = [
    "good_requests",
    "slo_attainment",
    "goodput_rps",
    "goodput_tokens_per_s",
    "cost_per_million_good_output_tokens",
];

/// Metrics that need an endpoint's `hardware`.
const HARDWARE_METRICS: [&str; 4] = [
    "output_tps_per_accelerator",
    "cost_per_million_output_tokens",
    "cost_per_million_total_tokens",
    "cost_per_million_good_output_tokens",
];

/// The warnings of `spec`'s gates and report metrics.
pub fn check(spec: &PlanSpec, tree: &Node) -> Vec<Diagnostic> {
    let named = spec
        .gates
        .keys()
        .map(|g| {
            (
                g.clone(),
                vec![Step::Key("gates".into()), Step::Key(g.clone())],
            )
        })
        .chain(
            spec.report
                .metrics
                .names()
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let at = vec![
                        Step::Key("report".into()),
                        Step::Key("metrics".into()),
                        Step::Index(i),
                    ];
                    (m.to_string(), at)
                }),
        );
    let mut diags = Vec::new();
    for (written, at) in named {
        let metric = names::split_class(&written).0;
        if spec.slo.is_empty() && SLO_METRICS.contains(&metric) {
            diags.push(
                Diagnostic::warning(
                    format!("`{written}` without [slo]: every successful request counts as good"),
                    Some(tree.locate(&at)),
                )
                .with_help("add per-request objectives: [slo] ttft = \"<= 2s\""),
            );
        }
        // Only where no endpoint has the table at all: a table with a key at fault (left
        // out of the checked plan) is its own error, and one without the key a choice.
        if HARDWARE_METRICS.contains(&metric)
            && spec.endpoints.values().all(|ep| ep.hardware.is_none())
        {
            diags.push(
                Diagnostic::warning(
                    format!("`{written}` needs an endpoint's `hardware`: none has it"),
                    Some(tree.locate(&at)),
                )
                .with_help("hardware = { accelerators = 8, cost_per_hour = 25.0 } on the endpoint"),
            );
        }
    }
    diags
}
