//! The suite's side of a public trace (`trace` with `format = "mooncake" | "burstgpt" |
//! "azure"`): each record's synthesised prompt becomes a request built from the run's
//! request settings, its output limit the record's `output_length` with `ignore_eos`
//! (`match_output_length`, on by default here), sent at its recorded offset under
//! `Load::Scheduled`; the trace's planned sharing joins the run's planned hit ratio.

use std::sync::Arc;

use super::prepare::PreparedRun;
use super::targets::Targets;
use super::traffic::{as_priming, dataset_error, replay_context, replay_warnings};
use super::WorkloadError;
use crate::api::{self, BodyInput};
use crate::dataset::{self, DatasetContext, RunSharing};
use crate::engine::PreparedRequest;
use crate::plan::TracePlan;
use crate::planner::RunSpec;
use crate::record::Phase;

/// The requests of a public trace's run.
pub(crate) fn prepare(
    run: &RunSpec,
    plan: &TracePlan,
    ctx: &DatasetContext,
    base: impl FnOnce(Vec<String>) -> PreparedRun,
) -> Result<PreparedRun, WorkloadError> {
    let s = &run.settings;
    let ctx = replay_context(run, ctx);
    let trace = dataset::trace_lengths::read(plan, &ctx).map_err(|e| dataset_error(run, e))?;
    let mut warnings = trace.warnings;
    warnings.extend(replay_warnings(run));
    let req = &run.request;
    let kind = req.api;
    let mut out = base(warnings);
    let mut offsets = Vec::with_capacity(trace.requests.len());
    let mut targets = Vec::with_capacity(trace.requests.len());
    let mut rng = super::prepare::output_rng(run);
    for (i, t) in trace.requests.into_iter().enumerate() {
        let limit = match plan.match_output_length {
            // A recorded answer of no tokens (a failed request) still asks for one.
            true => Some(t.output.max(1)),
            // The plan's `output_tokens`, drawn as for any other dataset.
            false => req.output.draw(None, &mut rng),
        };
        let mut fields = req.fields_with(limit);
        if plan.match_output_length {
            fields.insert("ignore_eos".into(), true.into());
        }
        let input = BodyInput {
            model: t.model.as_deref().unwrap_or(run.served_model()),
            prompt: &t.item.prompt,
            fields: &fields,
            stream: req.stream,
            include_usage: req.stream,
            continuous_usage: req.continuous_usage,
            reject_fields: &s.endpoint.spec.reject_fields,
        };
        let (path, body) = api::build_body(kind, &input)
            .map_err(|source| WorkloadError::Body { item: i, source })?;
        let (max_output_tokens, running_usage) = api::body_reads(&body);
        out.requests.push(PreparedRequest {
            item: i as u64,
            phase: Phase::Measured,
            kind,
            path: path.into(),
            body,
            stream: req.stream,
            client_input_tokens: t.item.client_input_tokens,
            max_output_tokens,
            running_usage,
            headers: Vec::new(),
            session: Some(super::session::session_key(
                s.seed,
                super::session::item_group(i as u64),
            )),
            class: None,
        });
        offsets.push(t.offset);
        targets.push(t.item.target_input_tokens);
    }
    if s.cache_state == crate::plan::CacheState::Warm {
        out.priming = as_priming(&out.requests);
    }
    out.targets = Arc::new(Targets::new(targets));
    out.sharing = Some(RunSharing::Trace(trace.sharing));
    out.schedule = Some(offsets);
    Ok(out)
}
