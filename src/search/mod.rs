//! One SLA-search run of a suite: asks its state machine (`bisect`, or `ladder` for an objective) for the next value, runs
//! each trial of it as a probe run of its own (the ordinary per-run machinery, stored and
//! linked to the search), pools the trials' stored request records into one verdict, and
//! stores the search's result as the search run's metrics (`sla_max_concurrency` /
//! `sla_max_rate`, with the pooled metrics of the highest passing value). Probes finished
//! by an earlier attempt are read back instead of rerun, so `--resume` repeats none.
//! The suite hands its search runs to [`DRIVER`] (it names nothing of this stage); each
//! trial goes through `Suite::one`. Must not know: HTTP details.

use std::collections::BTreeMap;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;

use serde_json::Value;

use crate::control::chain;
use crate::engine::Target;
use crate::metrics::condition::Condition;
use crate::metrics::sla::split_slo;
use crate::metrics::sla::{self, SearchOutcome};
use crate::metrics::{MetricDefinitions, RunSummary, SummaryOptions};
use crate::plan::{self, SearchVariable};
use crate::planner::search::probe_run;
use crate::planner::RunSpec;
use crate::record::facts::{SearchFacts, SearchStepFacts};
use crate::record::RunFacts;
use crate::store::{ProbeLink, RunFinish, RunRow, RunStatus, SearchRow, SearchStepRow};
use crate::suite::driver::{run_label, Ended, SearchDriver, Suite};
use crate::suite::SuiteError;
use bisect::{Next, Search, SearchResult};

mod bisect;
mod ladder;
mod optimum;

/// What one step gave: the value, the pooled summary and its verdict.
struct Step {
    value: f64,
    summary: RunSummary,
    verdict: sla::Verdict,
}

fn variable_name(var: SearchVariable) -> &'static str {
    match var {
        SearchVariable::Concurrency => "concurrency",
        SearchVariable::Rate => "rate",
    }
}

fn definitions(d: plan::MetricDefinitions) -> MetricDefinitions {
    match d {
        plan::MetricDefinitions::Perfplan => MetricDefinitions::Perfplan,
        plan::MetricDefinitions::Evalscope => MetricDefinitions::Evalscope,
        plan::MetricDefinitions::Vllm => MetricDefinitions::Vllm,
    }
}

/// How a finished search ended (its probes are runs of their own).
const SEARCH_DONE: Ended = Ended {
    completed: true,
    failed_requests: 0,
    failed_run: false,
};

/// "meets the SLO", or "fails: <the failed condition>".
fn verdict_text(v: &sla::Verdict) -> String {
    v.detail
        .as_deref()
        .map_or("meets the SLO".to_string(), |d| format!("fails: {d}"))
}

/// The pooled metrics of the probed `value`, or every metric unknown when there is none.
fn metrics_of(steps: &[Step], value: Option<f64>) -> BTreeMap<String, Option<f64>> {
    steps
        .iter()
        .find(|s| Some(s.value) == value)
        .map(|s| s.summary.values.clone())
        .unwrap_or_else(|| {
            crate::metrics::names::all_names()
                .into_iter()
                .map(|n| (n, None))
                .collect()
        })
}

fn invalid(run: &RunSpec, reason: String) -> SuiteError {
    SuiteError::Slo {
        text: format!("search of run {}", run.id),
        reason,
    }
}

/// Runs a search; how it ended in `Ended` (when interrupted, finished probes are kept).
/// The search driver a suite is given (`RunOptions::search`).
pub static DRIVER: Driver = Driver;

/// Runs SLA-search runs for a suite.
#[derive(Debug)]
pub struct Driver;

impl SearchDriver for Driver {
    fn search<'a>(
        &'a self,
        suite: &'a Suite<'a>,
        run: &'a RunSpec,
        target: &'a Target,
        (total, notes): (usize, Vec<String>),
    ) -> Pin<Box<dyn Future<Output = Result<Ended, SuiteError>> + 'a>> {
        Box::pin(search(suite, run, target, total, notes))
    }
}

async fn search(
    suite: &Suite<'_>,
    run: &RunSpec,
    target: &Target,
    total: usize,
    notes: Vec<String>,
) -> Result<Ended, SuiteError> {
    for w in &notes {
        suite.say(&format!("warning: {}: {w}", run_label(run, total)));
    }
    let Some(terms) = run.load.search() else {
        return Err(invalid(run, "not a search".into()));
    };
    let var = terms.variable;
    let b = terms
        .bounds
        .ok_or_else(|| invalid(run, "invalid precision".into()))?;
    let (objective, conds) = split_slo(&terms.slo).map_err(|e| invalid(run, e.to_string()))?;
    let (conds, floor) = sla::with_success_floor(conds);
    suite.say(&format!(
        "{}: success floor {}",
        run_label(run, total),
        floor.describe()
    ));
    {
        let mut store = suite.lock()?;
        store.begin_run(&run.id)?;
        store.clear_search(&run.id)?;
    }
    if let Some(objective) = objective {
        let o = optimum::Optimum {
            var,
            bounds: b,
            objective,
            conds,
            floor,
        };
        return optimum::search_optimum(suite, run, target, total, o).await;
    }
    let mut limit = Limit(Search::new(b));
    let Some((result, steps)) = drive(suite, (run, target, total), var, &conds, &mut limit).await?
    else {
        return interrupted_search(suite, run);
    };
    let row = search_row(run, (var, &floor), &result, &steps);
    suite.say(&format!("{}: {}", run_label(run, total), row.message));
    store_limit(suite, run, &row, (&result, &steps))
}

/// A search's state machine as [`drive`] runs it: the limit search here, the objective
/// search in `optimum`. Only this differs between the two; the loop of steps, their
/// trials, pools, stored steps and progress lines is one.
trait Machine {
    type Result;
    /// The next value to probe, or the search's result.
    fn next(&mut self) -> ControlFlow<Self::Result, f64>;
    /// Takes a step's pooled verdict; what to say of it after `search concurrency=8: `.
    fn record(&mut self, step: &Step) -> String;
}

/// The limit search: the highest value that meets the SLO.
struct Limit(Search);

impl Machine for Limit {
    type Result = SearchResult;
    fn next(&mut self) -> ControlFlow<SearchResult, f64> {
        match self.0.next() {
            Next::Done(result) => ControlFlow::Break(result),
            Next::Probe(value) => ControlFlow::Continue(value),
        }
    }
    fn record(&mut self, step: &Step) -> String {
        self.0.record(step.value, step.verdict.passed);
        verdict_text(&step.verdict)
    }
}

/// Probes the values `machine` asks for, one step each (`run_step`), until it is done:
/// its result and the steps; `None` when the suite was interrupted.
async fn drive<M: Machine>(
    suite: &Suite<'_>,
    (run, target, total): (&RunSpec, &Target, usize),
    var: SearchVariable,
    conds: &[Condition],
    machine: &mut M,
) -> Result<Option<(M::Result, Vec<Step>)>, SuiteError> {
    let label = run_label(run, total);
    let mut steps: Vec<Step> = Vec::new();
    loop {
        let value = match machine.next() {
            ControlFlow::Break(result) => return Ok(Some((result, steps))),
            ControlFlow::Continue(value) => value,
        };
        let step = (steps.len() as u32, value);
        let Some(step) = run_step(suite, run, target, total, step, conds).await? else {
            return Ok(None);
        };
        let said = machine.record(&step);
        suite.say(&format!(
            "{label}: search {}={value}: {said}",
            variable_name(var)
        ));
        steps.push(step);
    }
}

/// Stores a finished limit search: its row, and its metrics (`sla_max_*` and the pooled
/// metrics of the highest passing value).
fn store_limit(
    suite: &Suite<'_>,
    run: &RunSpec,
    row: &SearchRow,
    (result, steps): (&SearchResult, &[Step]),
) -> Result<Ended, SuiteError> {
    suite.lock()?.write_search(row)?;
    let mut metrics = metrics_of(steps, result.best_pass);
    metrics.insert(format!("sla_max_{}", row.variable), result.best_pass);
    let facts = RunFacts {
        search: Some(SearchFacts {
            best_pass: Some(row.best_pass),
            ..search_facts(row, steps)
        }),
        ..RunFacts::default()
    };
    finish_search(suite, run, RunStatus::Done, &metrics, &facts)?;
    Ok(SEARCH_DONE)
}

/// What a finished search's run keeps of it: its row and every step.
fn search_facts(row: &SearchRow, steps: &[Step]) -> SearchFacts {
    SearchFacts {
        variable: row.variable.clone(),
        outcome: row.outcome.clone(),
        first_fail: row.first_fail,
        failed_metric: row.failed_metric.clone(),
        steps: steps
            .iter()
            .map(|s| SearchStepFacts {
                value: s.value,
                passed: s.verdict.passed,
            })
            .collect(),
        message: row.message.clone(),
        ..SearchFacts::default()
    }
}

/// Stores an interrupted search (its finished probes are kept for `--resume`).
fn interrupted_search(suite: &Suite<'_>, run: &RunSpec) -> Result<Ended, SuiteError> {
    finish_search(
        suite,
        run,
        RunStatus::Interrupted,
        &BTreeMap::new(),
        &RunFacts::default(),
    )?;
    Ok(Ended {
        completed: false,
        failed_requests: 0,
        failed_run: false,
    })
}

fn finish_search(
    suite: &Suite<'_>,
    run: &RunSpec,
    status: RunStatus,
    metrics: &BTreeMap<String, Option<f64>>,
    facts: &RunFacts,
) -> Result<(), SuiteError> {
    suite.lock()?.finish_run(
        &run.id,
        &RunFinish {
            status,
            metrics,
            facts,
            warnings: &[],
            error: None,
            // Its probes are judged one by one; a step with an untrusted probe fails.
            verdict: (status == RunStatus::Done)
                .then(|| crate::trust::Verdict::judge(&[], &[]))
                .as_ref(),
        },
    )?;
    Ok(())
}

/// Every trial of one value (reusing those finished earlier), pooled into a verdict.
/// `None` when interrupted.
async fn run_step(
    suite: &Suite<'_>,
    run: &RunSpec,
    target: &Target,
    total: usize,
    (step, value): (u32, f64),
    conds: &[Condition],
) -> Result<Option<Step>, SuiteError> {
    let opts = SummaryOptions {
        definitions: definitions(suite.plan.spec.plan.metric_definitions),
        slos: suite.slos.to_vec(),
        inputs_per_request: run.inputs_per_request(),
        hardware: crate::planner::hardware_of(&run.settings),
        // A step's users are its probes' (a closed loop's concurrency), as each probe's own.
        users: probe_run(run, value, 0).and_then(|p| p.load.mode.users()),
        ..SummaryOptions::default()
    };
    let mut pool = sla::Pool::new(opts.definitions, &opts.slos);
    let mut untrusted: Option<String> = None;
    for trial in 0..run.load.search().map_or(1, |t| t.trials) {
        let probe =
            probe_run(run, value, trial).ok_or_else(|| invalid(run, "not a search".into()))?;
        let done = register_probe(suite, run, &probe, step, value, trial)?;
        if done {
            suite.say(&format!(
                "{}: done in an earlier attempt, reused",
                run_label(&probe, total)
            ));
        } else {
            match suite.one(&probe, target, total, Vec::new()).await {
                Ok(end) if end.completed => {}
                Ok(_) => return Ok(None),
                Err(e) => {
                    if !e.stops_suite() {
                        suite.say(&format!(
                            "error: {}: {}",
                            run_label(&probe, total),
                            chain(&e)
                        ));
                        suite.fail(&probe, &e)?;
                    }
                    return Err(e);
                }
            }
            if let Some(pause) = suite.plan.spec.plan.pause_between_runs {
                tokio::time::sleep(pause.0).await;
            }
        }
        // The trial's rows are read as a stream, twice (its span, then its records).
        let store = suite.lock()?;
        if untrusted.is_none() {
            untrusted = untrusted_probe(suite, &store, &probe.id)?;
        }
        pool.add_trial(|f| store.each_request_row(&probe.id, |row| f(&row.to_record())))?;
    }
    let summary = pool.finish(&opts);
    let mut verdict = sla::verdict(&summary.values, conds);
    if let Some(why) = untrusted.filter(|_| verdict.passed) {
        // A probe whose run cannot be trusted does not pass, whatever its metrics (a
        // step that failed its SLO says that first).
        verdict = sla::Verdict {
            passed: false,
            failed_metric: Some("verdict".into()),
            detail: Some(format!("a trial's run is {why}")),
        };
    }
    suite.lock()?.write_search_step(&SearchStepRow {
        search_id: run.id.clone(),
        step,
        value,
        passed: verdict.passed,
        failed_metric: verdict.failed_metric.clone(),
        metrics: summary.values.clone(),
    })?;
    Ok(Some(Step {
        value,
        summary,
        verdict,
    }))
}

/// Why a probe's run cannot pass a step whatever its metrics (its verdict, failures
/// aside: those are the search's own success floor's to judge), if it cannot.
fn untrusted_probe(
    suite: &Suite<'_>,
    store: &crate::store::Store,
    probe: &str,
) -> Result<Option<String>, SuiteError> {
    let judged = store
        .run_verdict(probe)?
        .accepting(&[crate::trust::Code::Failures]);
    Ok(judged
        .blocks_gates(suite.trust.strict)
        .then(|| judged.summary()))
}

/// Registers and links a probe run; whether it is already done.
fn register_probe(
    suite: &Suite<'_>,
    search: &RunSpec,
    probe: &RunSpec,
    step: u32,
    value: f64,
    trial: u32,
) -> Result<bool, SuiteError> {
    let mut store = suite.lock()?;
    store.register_runs(&[RunRow {
        id: probe.id.clone(),
        ordinal: probe.ordinal as u32,
        axes: Value::Object(probe.axes.clone()),
        settings: probe.redacted_settings(),
    }])?;
    store.link_probe(&ProbeLink {
        run_id: probe.id.clone(),
        search_id: search.id.clone(),
        step,
        value,
        trial,
    })?;
    Ok(store.run_status(&probe.id)? == RunStatus::Done)
}

/// `; success floor: success_ratio >= 1.0 (the default)`, appended to a search's sentence.
fn floor_clause(floor: &sla::SuccessFloor) -> String {
    let how = if floor.default { " (the default)" } else { "" };
    format!(
        "; success floor: success_ratio {}{how}",
        floor.condition.text
    )
}

/// The stored result, with a sentence saying what was found and the floor applied.
fn search_row(
    run: &RunSpec,
    (var, floor): (SearchVariable, &sla::SuccessFloor),
    result: &SearchResult,
    steps: &[Step],
) -> SearchRow {
    let name = variable_name(var);
    let failed = steps
        .iter()
        .find(|s| Some(s.value) == result.first_fail)
        .map(|s| &s.verdict);
    let failed_metric = failed.and_then(|v| v.failed_metric.clone());
    let detail = failed.and_then(|v| v.detail.clone()).unwrap_or_default();
    let message = match (result.outcome, result.best_pass, result.first_fail) {
        (SearchOutcome::MinFails, _, Some(min)) => format!(
            "even the lowest {name} searched ({min}) fails the SLO ({detail}): no load meets it; search stopped after {} probe(s)",
            steps.len()
        ),
        (SearchOutcome::MaxPasses, Some(max), _) => format!(
            "the highest {name} searched ({max}) still meets the SLO: raise `max` to find the limit"
        ),
        (_, Some(best), Some(fail)) => format!(
            "highest {name} meeting the SLO: {best} ({fail} fails: {detail}); {} probe(s)",
            steps.len()
        ),
        _ => format!("search ended after {} probe(s)", steps.len()),
    } + &floor_clause(floor);
    SearchRow {
        run_id: run.id.clone(),
        variable: name.to_string(),
        outcome: result.outcome.as_str().to_string(),
        best_pass: result.best_pass,
        first_fail: result.first_fail,
        failed_metric,
        slo: run.load.search().map(|t| t.slo.clone()).unwrap_or_default(),
        message,
    }
}
