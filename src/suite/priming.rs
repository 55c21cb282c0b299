//! The priming pass of a warm run (`cache_state = "warm"`): the run's request set sent once,
//! unmeasured and stored with phase `priming`, before the measured pass. A list of prompts
//! goes at the run's own load; a trace at its recorded pace, from its first record; a
//! multi-turn run plays the same conversations, without think time. A load bounded only
//! by its duration primes for the same duration with the requests its measured pass
//! sends first (built as they are sent), as many as the priming pass gets through.
//! Knows nothing about the database or the report.

use std::time::Duration;

use super::SuiteError;
use crate::engine::{Load, VecSource};
use crate::live::log::SuiteLog;
use crate::plan::CacheState;
use crate::planner::RunSpec;
use crate::workload::prepare::{Listed, PreparedRun, Requests};
use crate::workload::traffic::Source;

/// The priming pass: its source, its load and its duration.
pub(super) type Priming = (Source, Load, Option<Duration>);

/// The priming pass of a warm run, or `None` for a cold run or an empty pass.
pub(super) fn take(
    run: &RunSpec,
    prepared: &mut PreparedRun,
    planned: Load,
    log: &std::sync::Arc<SuiteLog>,
) -> Result<Option<Priming>, SuiteError> {
    if run.settings.cache_state != CacheState::Warm {
        return Ok(None);
    }
    Ok(match &mut prepared.requests {
        Requests::AsSent(production) => {
            let source =
                production.source(crate::workload::produce::Pass::Priming, Some(log.clone()))?;
            let duration = crate::workload::run_terms::engine_duration(run);
            Some((Source::Built(source), planned, duration))
        }
        Requests::Conversations { plan, .. } => {
            let source = crate::workload::conversation::ConversationSource::new(plan.priming());
            Some((Source::Conversations(Box::new(source)), planned, None))
        }
        Requests::List { list, .. } | Requests::Trace { list, .. } => list_pass(run, list, planned),
    })
}

fn list_pass(run: &RunSpec, list: &mut Listed, planned: Load) -> Option<Priming> {
    if list.priming.is_empty() {
        return None;
    }
    let requests = std::mem::take(&mut list.priming);
    match &list.schedule {
        Some(offsets) => {
            let offsets = from_first(&offsets[..requests.len().min(offsets.len())]);
            let source = VecSource::scheduled(requests, offsets);
            let load = Load::Scheduled {
                max_in_flight: run.load.mode.max_in_flight(),
            };
            Some((Source::List(source), load, None))
        }
        None => Some((Source::List(VecSource::new(requests)), planned, None)),
    }
}

/// Offsets made relative to the first: a shard's share of a trace primes from its own
/// first record, at once.
fn from_first(offsets: &[Duration]) -> Vec<Duration> {
    let first = offsets.first().copied().unwrap_or_default();
    offsets.iter().map(|o| o.saturating_sub(first)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_start_at_the_first_record() {
        let ms = Duration::from_millis;
        assert_eq!(
            from_first(&[ms(40), ms(50), ms(90)]),
            [ms(0), ms(10), ms(50)]
        );
        assert!(from_first(&[]).is_empty());
    }
}
