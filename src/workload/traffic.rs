//! The suite's side of the traffic kinds that are not a plain list of prompts:
//! trace replay (recorded bodies sent at recorded offsets under `Load::Scheduled`) and
//! multi-turn conversations (a `ConversationSource` building each turn from the last
//! answer). Also picks a run's request source and load, and adds the per-turn metrics.

use std::time::Duration;

use serde_json::Value;

use super::conversation::{ConversationPlan, ConversationSource, TurnTemplate};
use super::prepare::PreparedRun;
use super::requests::{Listed, Requests};
use super::WorkloadError;
use crate::api::{self, ApiKind, BodyInput, Prompt};
use crate::dataset::{self, DatasetContext};
use crate::engine::{Load, Next, PreparedRequest, RequestSource, VecSource};
use crate::metrics::turns::turn_metrics_of;
use crate::metrics::RunSummary;
use crate::plan::{DatasetPlan, TracePlan};
use crate::planner::RunSpec;
use crate::record::{Phase, RequestRecord, RunFacts};

/// Builds the request set of a trace or multi-turn run; `None` for every other kind.
pub(crate) fn prepare(
    run: &RunSpec,
    ctx: &DatasetContext,
    base: impl FnOnce(Vec<String>, Requests) -> PreparedRun,
) -> Result<Option<PreparedRun>, WorkloadError> {
    match &run.dataset {
        DatasetPlan::Trace(plan) if plan.format.synthesized() => {
            super::public_trace::prepare(run, plan, ctx, base).map(Some)
        }
        DatasetPlan::Trace(plan) => trace(run, plan, ctx, base).map(Some),
        DatasetPlan::RandomMultiTurn(_)
        | DatasetPlan::Conversations { .. }
        | DatasetPlan::ToolCalls(..) => conversation(run, ctx, base).map(Some),
        _ => Ok(None),
    }
}

/// The dataset context of a replay: `requests` takes the first records; without it,
/// every record (no duration cap).
pub(crate) fn replay_context(run: &RunSpec, ctx: &DatasetContext) -> DatasetContext {
    let mut ctx = ctx.clone();
    ctx.count = run.load.requests.map_or(usize::MAX, |n| n as usize);
    ctx
}

/// Record `i` of a replay (recorded or public) as it is sent: its body built by the API's
/// one rule, measured, in its session group; `(stream, client_input_tokens, headers)` as
/// the record asks.
pub(crate) fn replayed(
    run: &RunSpec,
    i: usize,
    input: &BodyInput<'_>,
    (stream, client_input_tokens, headers): (bool, Option<u32>, Vec<(String, String)>),
) -> Result<PreparedRequest, WorkloadError> {
    let kind = run.request.api;
    let (path, body) =
        api::build_body(kind, input).map_err(|source| WorkloadError::Body { item: i, source })?;
    let (max_output_tokens, running_usage) = api::body_reads(&body);
    let group = super::session::item_group(i as u64);
    Ok(PreparedRequest {
        item: i as u64,
        phase: Phase::Measured,
        kind,
        path: path.into(),
        body,
        stream,
        client_input_tokens,
        max_output_tokens,
        running_usage,
        headers,
        session: Some(super::session::session_key(run.settings.seed, group)),
        class: None,
        cancel_after: None,
        tools: None,
        check: None,
    })
}

pub(crate) fn dataset_error(run: &RunSpec, source: dataset::DatasetError) -> WorkloadError {
    WorkloadError::Dataset {
        dataset: run.settings.dataset.name.clone(),
        source,
    }
}

fn trace(
    run: &RunSpec,
    plan: &TracePlan,
    ctx: &DatasetContext,
    base: impl FnOnce(Vec<String>, Requests) -> PreparedRun,
) -> Result<PreparedRun, WorkloadError> {
    let s = &run.settings;
    let ctx = replay_context(run, ctx);
    let trace = dataset::trace::read(plan, &ctx).map_err(|e| dataset_error(run, e))?;
    let mut warnings = trace.warnings;
    warnings.extend(replay_warnings(run));
    let kind = run.request.api;
    // Recorded bodies are counted here, before the run: servers that send no usage
    // (a streamed record without `include_usage`) still get an input length.
    let counter = dataset::PromptCounter::new(&ctx).map_err(|e| dataset_error(run, e))?;
    let mut requests = Vec::with_capacity(trace.requests.len());
    let mut ids = Vec::with_capacity(trace.requests.len());
    let mut offsets = Vec::with_capacity(trace.requests.len());
    // The endpoint's own headers win over recorded ones of the same name.
    let own = &s.endpoint.spec.headers;
    let mine = |name: &str| own.keys().any(|k| k.eq_ignore_ascii_case(name));
    for (i, t) in trace.requests.into_iter().enumerate() {
        let headers: Vec<(String, String)> =
            t.headers.into_iter().filter(|(n, _)| !mine(n)).collect();
        let stream = t.body.get("stream").and_then(Value::as_bool) == Some(true);
        let client_input_tokens = counter.as_ref().and_then(|c| c.body(&t.body));
        let prompt = Prompt::Body(t.body);
        let empty = serde_json::Map::new();
        let input = BodyInput {
            model: run.served_model(),
            prompt: &prompt,
            fields: &empty,
            stream: false,
            include_usage: false,
            continuous_usage: false,
            reject_fields: &s.endpoint.spec.reject_fields,
        };
        let sent = (stream && kind.can_stream(), client_input_tokens, headers);
        requests.push(replayed(run, i, &input, sent)?);
        offsets.push(t.offset);
        ids.push(t.request_id);
    }
    let list = replay_list(run, requests, offsets);
    Ok(base(warnings, Requests::Trace { list, ids }))
}

/// A replay's requests sent at their recorded `offsets`, with the priming pass of a warm
/// run.
pub(crate) fn replay_list(
    run: &RunSpec,
    requests: Vec<PreparedRequest>,
    offsets: Vec<Duration>,
) -> Listed {
    let priming = match run.settings.cache_state {
        crate::plan::CacheState::Warm => as_priming(&requests),
        crate::plan::CacheState::Cold => Vec::new(),
    };
    Listed {
        requests,
        priming,
        schedule: Some(offsets),
    }
}

/// What a trace replay leaves out of the plan's load.
pub(crate) fn replay_warnings(run: &RunSpec) -> Vec<String> {
    let mut warnings = Vec::new();
    if run.load.warmup > 0 {
        warnings.push("a trace replay has no warmup: every record is measured".into());
    }
    if run.load.mode.names_unused_level() {
        warnings.push(
            "trace replay sends at the recorded times: the load's concurrency/rate is not used"
                .into(),
        );
    }
    warnings
}

/// The priming pass of a warm run: the same requests, marked `priming`.
pub(crate) fn as_priming(requests: &[PreparedRequest]) -> Vec<PreparedRequest> {
    let priming = |r: &PreparedRequest| PreparedRequest {
        phase: Phase::Priming,
        cancel_after: None,
        ..r.clone()
    };
    requests.iter().map(priming).collect()
}

fn conversation(
    run: &RunSpec,
    ctx: &DatasetContext,
    base: impl FnOnce(Vec<String>, Requests) -> PreparedRun,
) -> Result<PreparedRun, WorkloadError> {
    let s = &run.settings;
    let kind = run.request.api;
    let tools = matches!(run.dataset, DatasetPlan::ToolCalls(..));
    if kind != ApiKind::Chat && !(tools && kind == ApiKind::Responses) {
        let need = match tools {
            true => "tool_calls datasets need api = \"chat\" or \"responses\"",
            false => "multi-turn datasets need api = \"chat\"",
        };
        return Err(dataset_error(
            run,
            dataset::DatasetError::Invalid(format!("{need} (this run uses `{}`)", kind.as_str())),
        ));
    }
    let conversations =
        dataset::multi_turn::conversations(&run.dataset, ctx).map_err(|e| dataset_error(run, e))?;
    let warnings = Vec::new();
    // A closed loop counts conversations in flight; an open loop's `max_in_flight` bounds them.
    let max_active = run.load.mode.in_flight().map_or(usize::MAX, |n| n as usize);
    let tools = match &run.dataset {
        DatasetPlan::ToolCalls(_, tools) => Some(tool_plan(run, tools, ctx)?),
        _ => None,
    };
    // A tool-calling turn's prompt holds the tools as the chat template renders them
    // (its `tools` variable, as vLLM passes them).
    let mut counted = ctx.clone();
    if let Some(t) = &tools {
        let offered = t.set.body_field(ApiKind::Chat);
        counted.template_kwargs.entry("tools").or_insert(offered);
    }
    let plan = ConversationPlan {
        conversations,
        template: TurnTemplate {
            request: run.request.clone(),
            reject_fields: s.endpoint.spec.reject_fields.clone(),
            seed: run.dataset_seed,
            session_seed: s.seed,
            body_template: run
                .request
                .body_template
                .as_deref()
                .map(|t| crate::request::template::load(t, &ctx.base_dir).map(std::sync::Arc::new))
                .transpose()?,
        },
        warmup: run.load.warmup as usize,
        total: ctx.count,
        max_active,
        think_time: match &run.dataset {
            DatasetPlan::RandomMultiTurn(m) | DatasetPlan::ToolCalls(m, _) => m.think_time,
            DatasetPlan::Conversations { think_time, .. } => *think_time,
            _ => Duration::ZERO,
        },
        echo_reasoning: match &run.dataset {
            DatasetPlan::RandomMultiTurn(m) => m.echo_reasoning,
            DatasetPlan::Conversations { echo_reasoning, .. } => *echo_reasoning,
            _ => false,
        },
        priming: false,
        stop_new_after: run.load.duration,
        counter: dataset::PromptCounter::new(&counted).map_err(|e| dataset_error(run, e))?,
        prompt_sink: None,
        tools,
    };
    Ok(base(
        warnings,
        Requests::Conversations {
            plan: Box::new(plan),
            cap: None,
        },
    ))
}

/// The tools of a `tool_calls` run, read once (the file's, or the built-in set).
fn tool_plan(
    run: &RunSpec,
    tools: &crate::plan::ToolLoop,
    ctx: &DatasetContext,
) -> Result<super::conversation::ToolPlan, WorkloadError> {
    let set = dataset::tool_calls::tool_set(tools, ctx).map_err(|e| dataset_error(run, e))?;
    Ok(super::conversation::ToolPlan {
        set: std::sync::Arc::new(set),
        max_rounds: tools.max_tool_rounds,
        results: dataset::tool_calls::ToolResults::new(tools, ctx),
    })
}

/// The load of a run: the plan's, or a scheduled one for a trace.
pub(crate) fn load(prepared: &PreparedRun, planned: Load, max_in_flight: Option<u32>) -> Load {
    match prepared.requests.schedule() {
        Some(_) => Load::Scheduled { max_in_flight },
        None => planned,
    }
}

/// The measured pass's source of a run.
pub(crate) enum Source {
    List(VecSource),
    /// Requests built as they are sent (a load bounded only by its duration).
    Built(super::produce::BuiltSource),
    /// A trace replay, with each record's recorded `request_id` by item.
    Trace(VecSource, Vec<Option<String>>),
    Conversations(Box<ConversationSource>),
}

impl Source {
    pub(crate) fn new(
        requests: Requests,
        log: &std::sync::Arc<impl super::RequestLog + 'static>,
    ) -> Result<Source, WorkloadError> {
        let listed = |list: Listed| match list.schedule {
            Some(offsets) => VecSource::scheduled(list.requests, offsets),
            None => VecSource::new(list.requests),
        };
        Ok(match requests {
            Requests::AsSent(mut production) => {
                let pass = super::produce::Pass::Measured;
                let log: std::sync::Arc<dyn super::RequestLog> = log.clone();
                Source::Built(production.source(pass, Some(log))?)
            }
            Requests::Conversations { plan, .. } => {
                Source::Conversations(Box::new(ConversationSource::new(*plan)))
            }
            Requests::Trace { list, ids } => Source::Trace(listed(list), ids),
            Requests::List { list, .. } => Source::List(listed(list)),
        })
    }

    /// Warnings of a source that builds requests as they are sent (none otherwise).
    pub(crate) fn finish_building(&mut self) -> Vec<String> {
        match self {
            Source::Built(s) => s.finish(),
            _ => Vec::new(),
        }
    }

    /// Adds the per-turn metrics of a multi-turn run; returns what the run's facts keep
    /// of its traffic (the turn of each item, a trace's request ids).
    pub(crate) fn finish(
        &self,
        turns: Option<&[crate::metrics::turns::TurnSample]>,
        summary: &mut RunSummary,
    ) -> RunFacts {
        let c = match self {
            Source::Conversations(c) => c,
            Source::Trace(_, ids) if ids.iter().any(Option::is_some) => {
                return RunFacts {
                    trace_request_ids: Some(ids.clone()),
                    ..RunFacts::default()
                };
            }
            _ => return RunFacts::default(),
        };
        for (name, value) in turn_metrics_of(turns.unwrap_or_default(), c.turn_of_item()) {
            summary.values.insert(name.to_string(), value);
        }
        RunFacts {
            turn_of_item: Some(c.turn_of_item().to_vec()),
            conversation_errors: Some(c.errors.clone()),
            ..RunFacts::default()
        }
    }
}

impl RequestSource for Source {
    fn next(&mut self) -> Next {
        match self {
            Source::List(s) | Source::Trace(s, _) => s.next(),
            Source::Built(s) => s.next(),
            Source::Conversations(s) => s.next(),
        }
    }

    fn completed(&mut self, record: &RequestRecord) {
        match self {
            Source::List(s) | Source::Trace(s, _) => s.completed(record),
            Source::Built(s) => s.completed(record),
            Source::Conversations(s) => s.completed(record),
        }
    }

    fn offsets(&self) -> Option<Vec<Duration>> {
        match self {
            Source::List(s) | Source::Trace(s, _) => s.offsets(),
            Source::Built(_) | Source::Conversations(_) => None,
        }
    }

    fn requests_left(&self) -> Option<usize> {
        match self {
            Source::List(s) | Source::Trace(s, _) => s.requests_left(),
            Source::Built(s) => s.requests_left(),
            Source::Conversations(s) => s.requests_left(),
        }
    }
}
