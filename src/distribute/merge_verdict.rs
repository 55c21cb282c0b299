//! The verdict of a merged run: what the merged rows say anew (the merged client-bound
//! flag, the share of failures and of estimated counts, values that cannot be) judged
//! with the suite's thresholds, and every other reason a shard found carried with its
//! shard's name (a cache leak or a buffered stream on one shard taints the whole run);
//! the shards' evidence added up. Knows stored runs, not how shards ran.

use crate::metrics::RunSummary;
use crate::record::RunFacts;
use crate::store::StoredRun;
use crate::trust::{self, Code, Evidence, RunWarning, Thresholds, Verdict};

/// Codes the merged rows judge again; a shard's own are dropped for them.
const REJUDGED: &[Code] = &[
    Code::ClientBound,
    Code::Failures,
    Code::CountsEstimated,
    Code::ImpossibleValues,
    Code::PartialFailures,
];

/// The merged run's warnings and its verdict; its evidence goes to `merged_facts`.
pub fn merged(
    named: &[(String, &StoredRun)],
    summary: &RunSummary,
    trust: &Thresholds,
    merged_facts: &mut RunFacts,
) -> (Vec<RunWarning>, Option<Verdict>) {
    let mut warnings: Vec<RunWarning> = Vec::new();
    let mut evidence = Evidence::default();
    for (shard, run) in named {
        if let Some(e) = &run.facts.evidence {
            evidence.add(e);
        }
        for w in run.warnings.iter().filter(|w| !REJUDGED.contains(&w.code)) {
            let w = RunWarning {
                text: format!("shard {shard}: {}", w.text),
                ..w.clone()
            };
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    warnings.extend(trust::of_summary::client_bound(summary, trust));
    let facts = trust::of_summary::facts(summary);
    warnings.extend(
        trust::judge(&facts, trust)
            .into_iter()
            .filter(|w| REJUDGED.contains(&w.code)),
    );
    let verdict = Verdict::judge(&warnings, &trust.accept);
    merged_facts.evidence = Some(evidence);
    (warnings, Some(verdict))
}
