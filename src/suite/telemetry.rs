//! A run's server telemetry: the sampler started just before the measured pass's first
//! request and stopped after its last, and what it saw folded into the run's summary
//! (the telemetry scalars) and warnings. Knows the suite's run, not Prometheus.

use std::time::SystemTime;

use super::execute::RunContext;
use super::RunnerError;
use crate::metrics::RunSummary;
use crate::telemetry::sampler::{Sampler, SamplerOutcome};

/// Starts the run's sampler, if its endpoint has telemetry; a sampler that cannot start
/// is a warning.
pub fn start(ctx: &RunContext<'_>, run_id: &str, warnings: &mut Vec<String>) -> Option<Sampler> {
    let plan = ctx.telemetry.as_ref()?;
    match Sampler::start(plan, ctx.store.clone(), run_id) {
        Ok(s) => Some(s),
        Err(e) => {
            warnings.push(format!(
                "telemetry: cannot start the sampler thread ({e}); the run has no telemetry"
            ));
            None
        }
    }
}

/// Stops the sampler (one last scrape) and moves its times to the run's clock.
pub fn finish(
    sampler: Option<Sampler>,
    started: SystemTime,
) -> Result<Option<SamplerOutcome>, RunnerError> {
    match sampler {
        Some(s) => Ok(Some(s.finish(started)?)),
        None => Ok(None),
    }
}

/// The telemetry scalars into the summary (they stay null without telemetry), and the
/// sampler's warnings.
pub fn apply(outcome: Option<&SamplerOutcome>, summary: &mut RunSummary, warnings: &mut Vec<String>) {
    let Some(outcome) = outcome else {
        return;
    };
    let value = |k: &str| summary.values.get(k).copied().flatten();
    let client_tokens = value("output_tps")
        .zip(value("duration_s"))
        .map(|(tps, s)| tps * s);
    for (name, v) in crate::telemetry::scalars::scalars(&outcome.tallies(), client_tokens) {
        summary.values.insert(name.to_string(), v);
    }
    warnings.extend(outcome.warnings.iter().cloned());
}
