//! A run's requests, ready to send: the dataset materialized for the run's seed, each
//! prompt turned into a body by `api`, warmup first, and for warm runs the priming pass
//! (the measured set, sent once unmeasured).

use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::WorkloadError;
use crate::api::{self, ApiKind, BodyInput};
use crate::dataset::{self, DatasetContext, Materialized, PromptItem};
use crate::engine::PreparedRequest;
use crate::plan::CacheState;
use crate::planner::{self, RunSpec};
use crate::record::Phase;
use crate::request::template::{self, TemplateInput};
use crate::request::RequestPlan;
use crate::tokenize::{Tokenizer, TokenizerCache};

/// Most requests (warmup included) a run with a request count builds before it starts;
/// a larger count is built as it is sent. Building during the run puts a thread beside
/// the engine's inside the measured pass; at concurrency 256 on 2 cores its TTFT-error
/// p99 was within this machine's noise of a list's (bench/RESULTS.md, "Issue 17"), but a
/// run this size keeps exactly the old path (nothing built while it is measured) for a
/// list of some tens of MB at most.
pub(crate) const PREBUILT_MAX: usize = 1 << 16;

/// Most requests prepared for a duration-only load of a sharded run (`--shard`): a shard
/// keeps every Nth request of the run's one list, so that list is built before the run.
/// Unsharded duration-only loads have no such limit (their requests are built as sent).
pub(crate) const SHARDED_DURATION_ONLY_CAP: usize = 20_000;

/// Everything a run sends, and what the dataset reported.
#[derive(Debug)]
pub struct PreparedRun {
    /// The run's requests: a list, built as sent, a trace or conversations.
    pub requests: Requests,
    /// Target input length of each item (by `item`).
    pub targets: Arc<Targets>,
    pub warnings: Vec<String>,
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// What the run's prompts share as the server sees them (kind `random`), for the
    /// planned hit ratio.
    pub sharing: Option<dataset::RunSharing>,
    /// A mix: each class's tokenizer (its model's), by class index, for counting the
    /// output of a response without usage; empty for any other run.
    pub class_tokenizers: Vec<Option<Arc<Tokenizer>>>,
}

pub use super::requests::{Listed, Requests};
pub use super::targets::Targets;

/// How many measured requests a load asks for; `None` for a load bounded only by its
/// duration (its requests are built as they are sent, however many that takes).
pub fn measured_count(run: &RunSpec) -> Option<usize> {
    let requests = run.load.requests.map(|n| n as usize);
    if let planner::Load::Ramp { curve, .. } = &run.load.mode {
        return Some(ramp_count(curve, run.load.duration).min(requests.unwrap_or(usize::MAX)));
    }
    requests
}

/// A ramp's requests: its planned arrivals, or those planned before its `duration`.
fn ramp_count(curve: &planner::RateCurve, duration: Option<std::time::Duration>) -> usize {
    let all = curve.planned_requests() as usize;
    match duration {
        Some(d) => all.min(curve.cumulative(d.as_secs_f64()).round().max(1.0) as usize),
        None => all,
    }
}

/// What needs a run's whole request list before it starts, so that its requests cannot
/// be built as they are sent: a shard's share (every Nth request of the one list),
/// `[plan] store.bodies` (bodies are stored before the run), `check`'s probe (the first
/// request). A Poisson load with a request count also keeps its list: its balanced
/// schedule is drawn for the whole list at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    pub list: bool,
    /// The run is one shard's share (`--shard`).
    pub sharded: bool,
}

/// Loads the model's tokenizer (once per suite through the cache), if the plan names one.
pub fn tokenizer(
    run: &RunSpec,
    base_dir: &Path,
    cache: &TokenizerCache,
) -> Result<Option<Arc<Tokenizer>>, WorkloadError> {
    let Some(path) = run.settings.model.spec.tokenizer.as_deref() else {
        return Ok(None);
    };
    let full = base_dir.join(path);
    cache
        .load(&full)
        .map(Some)
        .map_err(|source| WorkloadError::Tokenizer {
            model: run.settings.model.name.clone(),
            source,
        })
}

/// What the dataset of a run needs to know, for `count` items.
pub(crate) fn dataset_context(
    run: &RunSpec,
    base_dir: &Path,
    tokenizer: Option<Arc<Tokenizer>>,
    count: usize,
) -> DatasetContext {
    let s = &run.settings;
    let kind = run.request.api;
    DatasetContext {
        base_dir: base_dir.to_path_buf(),
        tokenizer,
        chat: matches!(kind, ApiKind::Chat | ApiKind::Responses),
        tokenize_prompt: s.tokenize_prompt,
        chat_template: s.model.spec.chat_template,
        seed: run.dataset_seed,
        first: 0,
        count,
        template_kwargs: run.request.template_kwargs(),
        classes: Vec::new(),
    }
}

/// Builds the run's request set: every request before the run for a load with a
/// request count, the first ones (and the means to build the rest as they are sent)
/// for a load bounded only by its duration.
pub fn prepare(
    run: &RunSpec,
    base_dir: &Path,
    cache: &TokenizerCache,
    needs: Needs,
) -> Result<PreparedRun, WorkloadError> {
    let sharded = needs.sharded;
    let s = &run.settings;
    let tokenizer = tokenizer(run, base_dir, cache)?;
    let warmup = run.load.warmup as usize;
    let (measured, cap) = match measured_count(run) {
        Some(n) => (Some(n), None),
        None if sharded => (Some(sharded_cap(run)), Some(sharded_cap(run))),
        None => (None, None),
    };
    let count = measured.map_or(usize::MAX, |m| warmup + m);
    let mut ctx = dataset_context(run, base_dir, tokenizer.clone(), count);
    ctx.classes = super::mix::class_contexts(run, base_dir, cache, &ctx)?;
    let class_tokenizers: Vec<_> = ctx.classes.iter().map(|c| c.tokenizer.clone()).collect();
    let empty = |warnings, requests| PreparedRun {
        requests,
        targets: Arc::default(),
        warnings,
        tokenizer: tokenizer.clone(),
        sharing: None,
        class_tokenizers: class_tokenizers.clone(),
    };
    if let Some(mut special) = super::traffic::prepare(run, &ctx, empty)? {
        // A trace has no limit of its own: it ends with its records.
        if let Requests::Conversations { cap: limit, .. } = &mut special.requests {
            *limit = cap;
        }
        special.warnings.extend(super::golden::not_mixed(run));
        return Ok(special);
    }
    let builder = BodyBuilder::new(run, base_dir)?;
    let sharing =
        dataset::sharing(&run.dataset, &ctx).map_err(|source| WorkloadError::Dataset {
            dataset: s.dataset.name.clone(),
            source,
        })?;
    let listed = needs.list
        || sharded
        || poisson_schedule(run, 1).is_some()
        || matches!(run.load.mode, planner::Load::Ramp { .. })
        || count <= PREBUILT_MAX;
    if measured.is_none() || !listed {
        let production = super::produce::Production::start(run, ctx, builder)?;
        let (warnings, targets) = (production.warnings().to_vec(), production.targets());
        let mut out = empty(warnings, Requests::AsSent(Box::new(production)));
        out.warnings.extend(super::golden::not_mixed(run));
        out.targets = targets;
        out.sharing = sharing;
        return Ok(out);
    }
    let (list, targets, warnings) = prebuilt(run, &ctx, builder)?;
    let mut out = empty(warnings, Requests::List { list, cap });
    out.targets = targets;
    out.sharing = sharing;
    Ok(out)
}

/// A sharded duration-only load's list: rate × duration × 1.2 + 16 requests for an open
/// loop (never more than the cap), the cap for a closed one.
fn sharded_cap(run: &RunSpec) -> usize {
    match (&run.load.mode, run.load.duration) {
        (planner::Load::Open { rate, .. }, Some(d)) => {
            ((rate * d.as_secs_f64() * 1.2).ceil() as usize + 16).min(SHARDED_DURATION_ONLY_CAP)
        }
        _ => SHARDED_DURATION_ONLY_CAP,
    }
}

/// Every request of a run with a request count, built before it starts (when something
/// `Needs` the list), with their target lengths and the dataset's warnings.
fn prebuilt(
    run: &RunSpec,
    ctx: &DatasetContext,
    mut builder: BodyBuilder,
) -> Result<(Listed, Arc<Targets>, Vec<String>), WorkloadError> {
    let s = &run.settings;
    let Materialized {
        items,
        mut warnings,
        stats,
    } = dataset::materialize(&run.dataset, ctx).map_err(|source| WorkloadError::Dataset {
        dataset: s.dataset.name.clone(),
        source,
    })?;
    warnings.extend(missed_target_warning(&stats));
    let mut requests = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        requests.push(builder.build(i as u64, item)?);
    }
    let warmup = builder.warmup.min(requests.len());
    let priming = match s.cache_state {
        CacheState::Cold => Vec::new(),
        CacheState::Warm => super::traffic::as_priming(&requests[warmup..]),
    };
    // Golden requests join after the priming pass is taken: it never sends them.
    super::golden::mix_in(run, &ctx.base_dir, &mut requests, warmup)?;
    let targets = Arc::new(Targets::new(
        items.iter().map(|i| i.target_input_tokens).collect(),
    ));
    let schedule = poisson_schedule(run, requests.len());
    if let Some(offsets) = &schedule {
        // A duration-bound load sends rate × duration requests: the rest are never due.
        requests.truncate(offsets.len());
    }
    let list = Listed {
        requests,
        priming,
        schedule,
    };
    Ok((list, targets, warnings))
}

/// "N of M prompts missed their target length", when some did.
pub(crate) fn missed_target_warning(stats: &dataset::DatasetStats) -> Option<String> {
    (stats.missed_target > 0).then(|| {
        format!(
            "{} of {} prompts missed their target length (by at most {} tokens)",
            stats.missed_target, stats.targeted, stats.max_abs_miss
        )
    })
}

/// The seeded stream a run's drawn output lengths come from, item after item.
pub(crate) fn output_rng(run: &RunSpec) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(run.dataset_seed ^ 0x6f75_7470_7574)
}

/// Turns a run's prompt items into requests, item after item in order: the output
/// lengths come from one seeded stream, so item `i` gets the same body whether the run's
/// requests are built before it or as they are sent.
pub struct BodyBuilder {
    request: RequestPlan,
    /// A mix: each class's request plan (an item's class picks its own).
    classes: Vec<RequestPlan>,
    reject_fields: Vec<String>,
    template: Option<minijinja::Environment<'static>>,
    rng: ChaCha8Rng,
    /// Items before this one are warmup requests.
    pub warmup: usize,
    /// The plan's seed: each item's session id derives from it (`session`).
    session_seed: u64,
    /// Which session group each item is in (its prefix group, if any).
    sessions: super::session::ItemGroups,
    /// The load's cancellation injection: which measured items are aborted, and when.
    cancels: Option<planner::cancel::CancelPlan>,
}

impl BodyBuilder {
    pub fn new(run: &RunSpec, base_dir: &Path) -> Result<BodyBuilder, WorkloadError> {
        let s = &run.settings;
        Ok(BodyBuilder {
            request: run.request.clone(),
            classes: super::mix::class_requests(run),
            reject_fields: s.endpoint.spec.reject_fields.clone(),
            template: run
                .request
                .body_template
                .as_deref()
                .map(|t| template::load(t, base_dir))
                .transpose()?,
            rng: output_rng(run),
            warmup: run.load.warmup as usize,
            session_seed: s.seed,
            sessions: super::session::ItemGroups::of(run),
            cancels: run.load.cancel,
        })
    }

    /// The request of item `i` (called for every item in order).
    pub fn build(&mut self, i: u64, item: &PromptItem) -> Result<PreparedRequest, WorkloadError> {
        let req = item
            .class
            .and_then(|c| self.classes.get(usize::from(c)))
            .unwrap_or(&self.request);
        let kind = req.api;
        let fields = req.fields_with(req.output.draw(item.output_tokens, &mut self.rng));
        let input = BodyInput {
            model: &req.model,
            prompt: &item.prompt,
            fields: &fields,
            stream: req.stream,
            include_usage: req.stream,
            continuous_usage: req.continuous_usage,
            reject_fields: &self.reject_fields,
        };
        let (path, body) = match &self.template {
            None => api::build_body(kind, &input).map_err(|source| WorkloadError::Body {
                item: i as usize,
                source,
            })?,
            Some(env) => {
                let t = TemplateInput {
                    model: input.model,
                    prompt: input.prompt,
                    fields: input.fields,
                    stream: req.stream,
                    reject_fields: input.reject_fields,
                };
                (kind.path(), template::render(env, &t)?)
            }
        };
        let phase = if (i as usize) < self.warmup {
            Phase::Warmup
        } else {
            Phase::Measured
        };
        let (max_output_tokens, running_usage) = api::body_reads(&body);
        Ok(PreparedRequest {
            item: i,
            phase,
            kind,
            path: path.into(),
            body,
            stream: req.stream,
            client_input_tokens: item.client_input_tokens,
            max_output_tokens,
            running_usage,
            headers: Vec::new(),
            session: Some(super::session::session_key(
                self.session_seed,
                self.sessions.group(i),
            )),
            class: item.class,
            cancel_after: (phase == Phase::Measured)
                .then(|| self.cancels.and_then(|c| c.after_for(i)))
                .flatten(),
            tools: None,
            check: None,
        })
    }
}

/// The send times of a Poisson load with a request count (`engine::schedule`'s balanced
/// Poisson): N = the requests built, or rate × `duration` when that is fewer. Gamma and
/// constant arrivals, and loads bounded only by their duration, keep the engine's clock.
fn poisson_schedule(run: &RunSpec, n: usize) -> Option<Vec<std::time::Duration>> {
    let rate = match &run.load.mode {
        planner::Load::Ramp {
            curve, constant, ..
        } => return Some(ramp_schedule(curve, *constant, n, run.dataset_seed)),
        planner::Load::Open {
            rate,
            process: planner::ArrivalProcess::Poisson,
            ..
        } => *rate,
        _ => return None,
    };
    // A load bounded only by its duration has no list to schedule.
    run.load.requests?;
    let n = match run.load.duration {
        Some(d) if rate.is_finite() && rate > 0.0 => {
            n.min((rate * d.as_secs_f64()).round().max(1.0) as usize)
        }
        _ => n,
    };
    crate::engine::schedule::balanced_poisson(rate, n, run.dataset_seed)
}

/// The send times of a ramp's first `n` requests: the whole ramp's planned arrivals
/// drawn by time-rescaling (`engine::schedule::rescaled`), so that `requests` or
/// `duration` cut the ramp short without changing its shape.
fn ramp_schedule(
    curve: &planner::RateCurve,
    constant: bool,
    n: usize,
    seed: u64,
) -> Vec<std::time::Duration> {
    let all = curve.planned_requests() as usize;
    let mut times =
        crate::engine::schedule::rescaled(curve.total(), all, constant, seed, |u| curve.time_of(u));
    times.truncate(n);
    times
}
