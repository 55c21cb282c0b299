//! One run: the priming pass of a warm run, the measured load, records streamed to the
//! database, and the summary stored with the run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::writer::{Writer, WriterContext};
use super::SuiteError;
use crate::engine::{
    self, CancelHandle, Endpoint, Preconnect, RequestSource, RunConfig, RunOutput,
};
use crate::live::progress::RunProgress;
use crate::measure::answers;
use crate::measure::tally::{Tally, TallySettings};
use crate::metrics::steady::LoadShape;
use crate::metrics::{RunSummary, Slo, SummaryOptions};
use crate::plan;
use crate::planner::{self, RunSpec};
use crate::record::facts::{InputLengthFacts, TimeFacts};
use crate::record::{RequestRecord, RunFacts};
use crate::store::Store;
use crate::telemetry::run::{counts as server_counts, watch};
use crate::trust::warning::all_as;
use crate::trust::{Code, RunWarning};
use crate::workload::explore::measured_config;
use crate::workload::mix;
use crate::workload::prepare::{PreparedRun, Requests};
use crate::workload::run_terms::definitions;
pub use crate::workload::run_terms::engine_load;
use crate::workload::traffic::{self, Source};
use crate::workload::turn_inputs::TurnInputs;
use crate::workload::RequestLog;

/// After Ctrl-C, how long requests in flight may still finish.
const GRACE: Duration = Duration::from_secs(5);

/// What one run produced.
pub(crate) struct RunResult {
    pub summary: RunSummary,
    pub cancelled: bool,
    /// Rows the writer stored.
    pub stored: u64,
    /// Requests the engine sent (priming included).
    pub sent: u64,
    /// Everything said about the run, typed (its verdict's reasons among them).
    pub warnings: Vec<RunWarning>,
    /// What the records said of the run's trustworthiness (stored with its facts).
    pub evidence: crate::trust::Evidence,
    /// The traffic's facts (multi-turn: the turn of every item; a trace: its request ids;
    /// the replicas' URLs); no other field is set.
    pub traffic: RunFacts,
    /// When no measured request succeeded: why (classes and the first error).
    pub all_failed: Option<String>,
    /// Target, client and server input lengths compared (see `lengths`).
    pub input_lengths: InputLengthFacts,
    /// Wall-clock start of the measured pass (its record times are offsets from it).
    pub started: std::time::SystemTime,
    /// The connections opened before the measured pass (lean client only).
    pub preconnect: Option<Preconnect>,
    /// The slice width and steady-state window, kept with the run's facts (`time`).
    pub time: TimeFacts,
    /// A mix: each class's metrics, by class index (empty for any other run).
    pub classes: Vec<RunSummary>,
    /// The server's counters against the client's sums (`None` without a server scrape).
    pub server_counts: Option<crate::telemetry::counts::ServerCounts>,
    /// A run with `cancel`: the server's gauges after it against before (`cancel_settle`).
    pub settle: Option<crate::telemetry::settle::Settle>,
}

/// Everything a run needs from its suite.
pub(crate) struct RunContext<'a> {
    pub store: Arc<Mutex<Store>>,
    pub endpoint: &'a Endpoint,
    pub cancel: &'a CancelHandle,
    /// `stop_when = "saturated"`: told every record, it triggers `cancel` on saturation.
    pub saturation: Option<&'a crate::measure::saturation::SaturationStop>,
    pub slos: &'a [Slo],
    pub definitions: plan::MetricDefinitions,
    pub label: String,
    pub log: std::sync::Arc<crate::live::log::SuiteLog>,
    /// What the run's telemetry watches (the server's counters, the sampler, its log).
    pub watch: crate::telemetry::run::RunTelemetry,
    /// `--shard`: the first stored request index (0 when not sharded).
    pub index_base: u64,
    /// `--start-at` and the start barrier: when the measured pass (warmup first) starts.
    pub start: crate::distribute::start_at::Start<'a>,
    /// `[plan] store`: keep request bodies and response texts.
    pub keep: plan::StoreSpec,
    /// `[report] slice`: the width of the run's time slices.
    pub slice: Duration,
    /// `[trust]`: the thresholds of the run's verdict.
    pub trust: &'a crate::trust::Thresholds,
}

/// The endpoint of one pass: an `x-request-id` made of the run id and the stored index
/// (from `first`), so server logs join the records; raw responses kept for `--debug`.
fn pass_endpoint(ctx: &RunContext<'_>, run_id: &str, first: u64) -> Endpoint {
    ctx.endpoint
        .clone()
        .with_request_ids(run_id, first)
        .with_raw_responses(ctx.log.debug())
}

/// A failed load of `run` as the suite reports it.
fn load_error(run: &RunSpec) -> impl FnOnce(engine::RunError) -> SuiteError + '_ {
    |source| SuiteError::Load {
        run: run.id.clone(),
        source,
    }
}

/// The engine's settings of a run's passes.
fn run_config(run: &RunSpec, prepared: &PreparedRun) -> RunConfig {
    RunConfig {
        load: traffic::load(prepared, engine_load(run), run.load.mode.max_in_flight()),
        // A multi-turn run's source applies the duration itself: started conversations
        // finish their turns.
        duration: crate::workload::run_terms::engine_duration(run)
            .filter(|_| !prepared.requests.is_conversations()),
        grace: GRACE,
    }
}

/// The writer of a run's rows, started before its first request (bodies stored and
/// logged first), and the multi-turn input counts it fills in.
fn start_writer(
    ctx: &RunContext<'_>,
    run: &RunSpec,
    prepared: &mut PreparedRun,
    block_size: Option<u32>,
) -> Result<(Writer, Option<Arc<TurnInputs>>), SuiteError> {
    let turn_inputs = crate::workload::turn_inputs::connect(prepared);
    let writer = Writer::start(WriterContext {
        store: ctx.store.clone(),
        run_id: run.id.clone(),
        tokenizer: prepared.tokenizer.clone(),
        class_tokenizers: prepared.class_tokenizers.clone(),
        targets: prepared.targets.clone(),
        log: ctx.log.clone(),
        cancel: ctx.cancel.clone(),
        keep_text: ctx.keep.text,
        turn_inputs: turn_inputs.clone(),
        tally: tally_settings(ctx, run, prepared, block_size),
    })?;
    let (requests, priming) = match prepared.requests.listed() {
        Some(list) => (&list.requests[..], &list.priming[..]),
        None => (&[][..], &[][..]),
    };
    if ctx.keep.bodies {
        let bodies = requests.iter().chain(priming);
        let mut store = ctx.store.lock().map_err(|_| SuiteError::Poisoned)?;
        store.write_bodies(&run.id, bodies.map(|r| (r.item, &r.body[..])))?;
    }
    ctx.log.requests(&run.id, priming);
    ctx.log.requests(&run.id, requests);
    Ok((writer, turn_inputs))
}

/// The priming pass of a warm run, if it has one: how many requests it sent, and its
/// warnings.
async fn prime(
    ctx: &RunContext<'_>,
    run: &RunSpec,
    prepared: &mut PreparedRun,
    cfg: &RunConfig,
    sink: &mut (impl FnMut(RequestRecord) + Send),
) -> Result<(u64, Vec<RunWarning>), SuiteError> {
    // An exploring priming pass explores with a control of its own.
    let planned = match cfg.load {
        engine::Load::Explore { .. } => crate::workload::run_terms::engine_load(run),
        ref load => load.clone(),
    };
    let Some((mut source, load, duration)) =
        super::priming::take(run, prepared, planned, &ctx.log)?
    else {
        return Ok((0, Vec::new()));
    };
    let priming_cfg = RunConfig {
        load,
        duration,
        ..cfg.clone()
    };
    let endpoint = pass_endpoint(ctx, &run.id, ctx.index_base);
    let out = engine::run(&endpoint, &mut source, &priming_cfg, ctx.cancel, sink)
        .await
        .map_err(load_error(run))?;
    let mut warnings = all_as(Code::Connections, out.preconnect.and_then(|p| p.warning()));
    warnings.extend(all_as(Code::Dataset, source.finish_building()));
    Ok((out.sent, warnings))
}

/// `--start-at` and the start barrier: the connections are opened before the barrier,
/// so every shard's first request goes out at the barrier's instant (the engine's own
/// pre-connect then finds them open). The early connections, and the warning of a
/// start already past.
async fn barrier(
    ctx: &RunContext<'_>,
    cfg: &RunConfig,
    requests_left: Option<usize>,
) -> Result<(Option<Preconnect>, Option<String>), SuiteError> {
    if ctx.start.is_now() {
        return Ok((None, None));
    }
    let early = ctx
        .endpoint
        .preconnect(cfg.preconnections(requests_left))
        .await;
    Ok((early, ctx.start.wait().await?))
}

/// Executes one prepared run and stores its records and summary.
pub async fn execute(
    ctx: &RunContext<'_>,
    run: &RunSpec,
    mut prepared: PreparedRun,
) -> Result<RunResult, SuiteError> {
    let (cfg, explore, queue) = measured_config(run, run_config(run, &prepared));
    let progress = RunProgress::new(&ctx.label, planned_total(run, &prepared))
        .with_events(&ctx.log, &run.id)
        .with_lines(&ctx.log, &ctx.label);
    let opening = server_counts::opening(&ctx.watch).await;
    let endpoint_block = run.settings.endpoint.spec.cache_block_size;
    let block = endpoint_block.or(opening.as_ref().and_then(|o| o.block_size));
    let (writer, turn_inputs) = start_writer(ctx, run, &mut prepared, block)?;
    let tx = writer.sender(ctx.cancel);
    let window = server_counts::Window::default();
    // Each record goes once, by value, to the writer (which folds what the metrics read).
    let sink_for = |offset: u64| {
        let (progress, tx, window, stop) = (&progress, &tx, &window, ctx.saturation);
        move |mut r: RequestRecord| {
            progress.tick(&r);
            window.add(&r);
            crate::measure::saturation::observe(stop, &r);
            if let Some(tx) = tx {
                r.index += offset;
                tx.send(r);
            }
        }
    };
    let (primed, mut warnings) =
        prime(ctx, run, &mut prepared, &cfg, &mut sink_for(ctx.index_base)).await?;
    // Request indices are unique within a run: the measured pass continues after the priming pass.
    let offset = ctx.index_base + primed;
    let mut sink = sink_for(offset);
    let (before, priming_counts) =
        server_counts::before_measured(&ctx.watch, &run.id, opening.as_ref(), (primed, &window))
            .await?;
    let cap = prepared.requests.cap();
    let mut source = Source::new(prepared.requests, &ctx.log)?;
    let (early, late) = barrier(ctx, &cfg, source.requests_left()).await?;
    let endpoint = pass_endpoint(ctx, &run.id, offset);
    let watch = watch::start(&ctx.watch, &run.id, queue, &mut warnings);
    let mut output = engine::run(&endpoint, &mut source, &cfg, ctx.cancel, &mut sink)
        .await
        .map_err(load_error(run))?;
    let telemetry = watch::finish(watch, output.started)?;
    if let Some(early) = early {
        output.preconnect = Some(early.then(output.preconnect));
    }
    warnings.extend(super::pass_warnings::after_load(&mut source, cap, &output));
    let closing = server_counts::after_measured(
        &ctx.watch,
        &run.id,
        before.as_ref(),
        &window,
        output.peak_in_flight,
    )
    .await;
    let limit = run.load.cancel.map(|c| c.settle);
    let settle = server_counts::settle_gauges(&ctx.watch, before.as_ref(), limit).await;
    drop(tx);
    progress.finish();
    // A failed write of the rows is the error to report, before anything after it.
    let written = writer.finish()?;
    drop(turn_inputs);
    let closing = closing?;
    let server_ratio = closing.ratio;
    let server_counts = closing.counts_with(priming_counts, &telemetry);
    let passes = Passes {
        tally: written.tally,
        primed,
        stored: written.rows,
        server_ratio: server_ratio.or(telemetry.log_hit_ratio),
        late,
        telemetry,
        server_counts,
        explore,
        settle,
    };
    Ok(conclude(ctx, run, &source, output, passes, warnings))
}

/// What the passes of a run left for its result.
struct Passes {
    /// The measured pass's records (warmup included), folded by the writer.
    tally: Tally,
    primed: u64,
    stored: u64,
    server_ratio: Option<f64>,
    /// The warning of a `--start-at` already past.
    late: Option<String>,
    telemetry: crate::telemetry::run::watch::Observed,
    server_counts: Option<crate::telemetry::counts::ServerCounts>,
    /// An exploring run's control: the steps it held.
    explore: Option<crate::workload::explore::Shared>,
    /// A run with the load's `cancel`: the server's gauges after it, against before.
    settle: Option<crate::telemetry::settle::Settle>,
}

/// The run's summary and warnings, from its measured records.
fn conclude(
    ctx: &RunContext<'_>,
    run: &RunSpec,
    source: &Source,
    output: RunOutput,
    mut passes: Passes,
    mut warnings: Vec<RunWarning>,
) -> RunResult {
    let tally = &mut passes.tally;
    let planned = tally.planned.planned();
    warnings.extend(tally.leak.warning(run, planned.prefix_share, ctx.trust));
    let mut summary = summarize_output(ctx, run, (&output, tally), passes.server_ratio);
    let classes = tally.class_summaries(&SummaryOptions {
        definitions: definitions(ctx.definitions),
        slos: ctx.slos.to_vec(),
        inputs_per_request: run.inputs_per_request(),
        ..SummaryOptions::default()
    });
    warnings.extend(all_as(Code::Mix, mix::warnings(run, &classes)));
    let mut said = Vec::new();
    crate::telemetry::run::watch::apply(&passes.telemetry, &mut summary, &mut said);
    warnings.extend(all_as(Code::Telemetry, said));
    warnings.extend(crate::measure::cache::measured_against_planned(
        run, &summary, ctx.trust,
    ));
    let defs = definitions(ctx.definitions);
    let window = (&tally.window, ctx.slice);
    let (mut time, steady) =
        crate::measure::steady::measure(&ctx.store, run, window, defs, &mut summary);
    let explored = crate::measure::explore::finish(
        &ctx.store,
        run,
        passes.explore.as_ref(),
        defs,
        (&mut time, &mut summary),
    );
    warnings.extend(all_as(Code::SteadyWindow, explored));
    let traffic = source.finish(tally.turns.as_deref(), &mut summary);
    let client_cut = client_cut(ctx, run);
    let cut = (output.cancelled, client_cut);
    let all_failed = crate::measure::failures::all_failed_unless_cut(&summary, &tally.errors, cut);
    let (input_lengths, length_warning) = tally.input_lengths();
    let preconnect = output.preconnect.as_ref().and_then(Preconnect::warning);
    warnings.extend(all_as(Code::Connections, preconnect));
    let preconnected = output.preconnect.is_some();
    let reconnects = crate::measure::connections::reconnects(run, preconnected, &summary);
    warnings.extend(all_as(Code::Connections, reconnects));
    warnings.extend(all_as(Code::LateStart, passes.late));
    warnings.extend(all_as(Code::InputLengths, length_warning));
    warnings.extend(crate::trust::of_summary::record_warnings(&summary));
    warnings.extend(all_as(Code::SteadyWindow, steady));
    let partial =
        crate::measure::failures::partial_failure_warning(&summary, &tally.errors, client_cut);
    warnings.extend(all_as(Code::PartialFailures, partial));
    let evidence = tally.evidence();
    let mut server = crate::measure::judge::trust_counts(passes.server_counts.as_ref());
    let leak =
        crate::measure::kv_leak::reasons(run, &summary, passes.settle.as_ref(), server.as_mut());
    warnings.extend(leak.into_iter().chain(answers::from_store(&ctx.store, run)));
    let judged = (server, ctx.trust, client_cut);
    crate::measure::judge::reasons(run, &mut summary, &evidence, &mut warnings, judged);
    RunResult {
        summary,
        cancelled: output.cancelled,
        stored: passes.stored,
        sent: passes.primed + output.sent,
        warnings,
        evidence,
        traffic,
        all_failed,
        input_lengths,
        started: output.started,
        preconnect: output.preconnect,
        time,
        classes,
        server_counts: passes.server_counts,
        settle: passes.settle,
    }
}

/// Whether the client cut requests short (the load's `cancel`, a stop on saturation):
/// the requests it cancelled are not failures.
fn client_cut(ctx: &RunContext<'_>, run: &RunSpec) -> bool {
    ctx.saturation.is_some_and(|s| s.fired().is_some()) || run.load.cancel.is_some()
}

/// How the writer folds a run's records: the metric definitions and SLOs, the first
/// wave the leak check reads, and whether per-turn samples are kept.
fn tally_settings(
    ctx: &RunContext<'_>,
    run: &RunSpec,
    prepared: &PreparedRun,
    block_size: Option<u32>,
) -> TallySettings {
    TallySettings {
        definitions: definitions(ctx.definitions),
        slos: ctx.slos.to_vec(),
        first_wave: run
            .load
            .mode
            .first_in_flight()
            .map_or(1, |first| first.max(1) as usize),
        shape: match run.load.mode {
            planner::Load::Closed { concurrency } => LoadShape::Closed {
                concurrency: concurrency.max(1) as usize,
            },
            planner::Load::Ramp { .. }
            | planner::Load::ClosedRamp { .. }
            | planner::Load::Explore(_) => LoadShape::Ramp,
            _ => LoadShape::Open,
        },
        turns: prepared.requests.is_conversations(),
        targets: prepared.targets.clone(),
        sharing: prepared.sharing.clone(),
        block_size,
        warm: run.settings.cache_state == crate::plan::CacheState::Warm,
        classes: run.settings.mix.as_ref().map_or(0, Vec::len),
        trust: ctx.trust.clone(),
    }
}

/// Requests (or turns) the run will send, priming included; `None` when its duration,
/// not a count, ends it.
fn planned_total(run: &RunSpec, prepared: &PreparedRun) -> Option<u64> {
    match &prepared.requests {
        Requests::AsSent(production) => production.planned(),
        Requests::Conversations { plan: c, .. } if c.total == usize::MAX => None,
        Requests::Conversations { plan: c, .. } => {
            Some((c.total + crate::workload::conversation::conversation_turns(run, c.total)) as u64)
        }
        Requests::List { list, .. } | Requests::Trace { list, .. } => {
            Some((list.requests.len() + list.priming.len()) as u64)
        }
    }
}

/// The run's metrics from its records (their outputs counted by the writer).
fn summarize_output(
    ctx: &RunContext<'_>,
    run: &RunSpec,
    (output, tally): (&RunOutput, &mut Tally),
    server_cache_hit_ratio: Option<f64>,
) -> RunSummary {
    let opts = SummaryOptions {
        definitions: definitions(ctx.definitions),
        slos: ctx.slos.to_vec(),
        client_cpu_s: output.client_cpu.map(|d| d.as_secs_f64()),
        client_wait_s: output.client_wait.map(|d| d.as_secs_f64()),
        client_wall_s: Some(output.wall.as_secs_f64()),
        inputs_per_request: run.inputs_per_request(),
        server_cache_hit_ratio,
        planned_prefix_share: tally.planned.planned().prefix_share,
        planned_template_share: tally.planned.planned().template_share,
        lateness_limit_ms: ctx.trust.lateness_p99_ms,
        cpu_share_limit: ctx.trust.client_cpu_share,
        wait_share_limit: ctx.trust.client_wait_share,
        users: run.load.mode.users(),
        hardware: planner::hardware_of(&run.settings),
        ..SummaryOptions::default()
    };
    tally.summary(&opts)
}
