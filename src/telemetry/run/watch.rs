//! A run's server telemetry: the sampler started just before the measured pass's first
//! request and stopped after its last, a launched server's log span over the same pass
//! (its cache hit ratio, for servers that report it only there), and what both saw
//! folded into the run's summary (the telemetry scalars) and warnings. Knows the suite's
//! run, not Prometheus.

use std::time::SystemTime;

use super::RunTelemetry;
use crate::metrics::RunSummary;
use crate::telemetry::log_cache::LogSpan;
use crate::telemetry::sampler::{Sampler, SamplerOutcome};
use crate::telemetry::TelemetryError;

/// What watches the server during a measured pass.
pub struct Watch {
    sampler: Option<Sampler>,
    log: Option<LogSpan>,
}

/// What the watch saw.
pub struct Observed {
    pub sampled: Option<SamplerOutcome>,
    /// The prefix-cache hit ratio in the launched server's log over the pass.
    pub log_hit_ratio: Option<f64>,
}

/// Starts watching: the run's sampler, if its endpoint has telemetry (one that cannot
/// start is a warning), telling `queue` the server's waiting requests as it reads them,
/// and the launched server's log from its current end.
pub fn start(
    ctx: &RunTelemetry,
    run_id: &str,
    queue: Option<crate::telemetry::queue::QueueGauge>,
    warnings: &mut Vec<crate::trust::RunWarning>,
) -> Watch {
    let sampler = ctx.plan.as_ref().and_then(|plan| {
        Sampler::start(plan, ctx.store.clone(), run_id, queue)
            .map_err(|e| {
                warnings.push(crate::trust::RunWarning::new(
                    crate::trust::Code::Telemetry,
                    format!("cannot start the sampler thread ({e}); the run has no telemetry"),
                ));
            })
            .ok()
    });
    let log = ctx.server_log.as_deref().and_then(LogSpan::begin);
    Watch { sampler, log }
}

/// Stops the sampler (one last scrape, its times moved to the run's clock) and reads
/// the log span.
pub fn finish(watch: Watch, started: SystemTime) -> Result<Observed, TelemetryError> {
    let sampled = match watch.sampler {
        Some(s) => Some(s.finish(started)?),
        None => None,
    };
    let log_hit_ratio = watch
        .log
        .and_then(|span| span.counts())
        .and_then(|c| c.hit_ratio());
    Ok(Observed {
        sampled,
        log_hit_ratio,
    })
}

impl Observed {
    /// The most requests the server had running plus waiting at one scrape.
    pub fn server_in_flight_max(&self) -> Option<u64> {
        let tallies = self.sampled.as_ref()?.tallies();
        let most = tallies.iter().find_map(|t| {
            let g = t.gauges.get(crate::telemetry::scalars::IN_FLIGHT)?;
            (g.n > 0).then_some(g.max)
        })?;
        Some(most.max(0.0).round() as u64)
    }
}

/// The telemetry scalars into the summary (they stay null without telemetry), and the
/// sampler's warnings.
pub fn apply(observed: &Observed, summary: &mut RunSummary, warnings: &mut Vec<String>) {
    let Some(outcome) = &observed.sampled else {
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
