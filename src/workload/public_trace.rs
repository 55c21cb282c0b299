//! The suite's side of a public trace (`trace` with `format = "mooncake" | "burstgpt" |
//! "azure"`): each record's synthesised prompt becomes a request built from the run's
//! request settings, its output limit the record's `output_length` with `ignore_eos`
//! (`match_output_length`, on by default here), sent at its recorded offset under
//! `Load::Scheduled`; the trace's planned sharing joins the run's planned hit ratio.

use std::sync::Arc;

use super::prepare::PreparedRun;
use super::requests::Requests;
use super::targets::Targets;
use super::traffic::{dataset_error, replay_context, replay_list, replay_warnings, replayed};
use super::WorkloadError;
use crate::api::BodyInput;
use crate::dataset::{self, DatasetContext, RunSharing};
use crate::plan::TracePlan;
use crate::planner::RunSpec;

/// The requests of a public trace's run.
pub(crate) fn prepare(
    run: &RunSpec,
    plan: &TracePlan,
    ctx: &DatasetContext,
    base: impl FnOnce(Vec<String>, Requests) -> PreparedRun,
) -> Result<PreparedRun, WorkloadError> {
    let s = &run.settings;
    let ctx = replay_context(run, ctx);
    let trace = dataset::trace_lengths::read(plan, &ctx).map_err(|e| dataset_error(run, e))?;
    let mut warnings = trace.warnings;
    warnings.extend(replay_warnings(run));
    let req = &run.request;
    let mut requests = Vec::with_capacity(trace.requests.len());
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
        let sent = (req.stream, t.item.client_input_tokens, Vec::new());
        requests.push(replayed(run, i, &input, sent)?);
        offsets.push(t.offset);
        targets.push(t.item.target_input_tokens);
    }
    let list = replay_list(run, requests, offsets);
    let mut out = base(
        warnings,
        Requests::Trace {
            list,
            ids: Vec::new(),
        },
    );
    out.targets = Arc::new(Targets::new(targets));
    out.sharing = Some(RunSharing::Trace(trace.sharing));
    Ok(out)
}
