//! One run of a suite on the engine: its requests prepared, this shard's share taken
//! (`--shard`; a run with no share is stored done and empty), `--start-at` (the first
//! run) and the start barrier (every run) handed to its load, the run begun, executed
//! and stored with its status, facts (the barrier's among them) and warnings,
//! and its summary line printed. Knows one run, not the order of a suite's runs.

use std::time::Duration;

use crate::record::RunFacts;

use super::text::summary_line;
use super::{run_label, Suite};
use crate::distribute::shard::{shard_facts, Shard};
use crate::distribute::start_at::{Meet, Start};
use crate::engine::{Endpoint, RunConfig, Target};
use crate::planner::RunSpec;
use crate::store::{RunFinish, RunStatus};
use crate::suite::counts::{self, Sent};
use crate::suite::execute::{self, RunContext, RunResult};
use crate::suite::SuiteError;
use crate::telemetry::run::RunTelemetry;
use crate::telemetry::sampler::TelemetryPlan;
use crate::telemetry::{CounterNames, ServerScrape};
use crate::trust::warning::all_as;
use crate::trust::{Code, RunWarning, Status, Verdict};
use crate::workload::prepare::{self, PreparedRun};
use crate::workload::share::take_share;

/// How a run ended: completed (not interrupted), and how many of its requests failed.
pub struct Ended {
    pub completed: bool,
    pub failed_requests: u64,
    /// Every measured request failed: the run is stored as failed.
    pub failed_run: bool,
}

impl Suite<'_> {
    /// One run; how it ended (interrupted, or every measured request failed) in `Ended`.
    /// The run's requests, as `prepare` builds them for this suite.
    fn prepare(&self, run: &RunSpec) -> Result<PreparedRun, SuiteError> {
        let needs = prepare::Needs {
            list: self.plan.spec.plan.store.bodies,
            sharded: self.shard.is_some(),
        };
        Ok(prepare::prepare(
            run,
            &self.plan.base_dir,
            &self.cache,
            needs,
        )?)
    }

    pub async fn one(
        &self,
        run: &RunSpec,
        target: &Target,
        total: usize,
        notes: Vec<String>,
    ) -> Result<Ended, SuiteError> {
        let mut prepared: PreparedRun = self.prepare(run)?;
        let share;
        let (run, index_base, lead) = match self.shard.map(|s| take_share(&s, run, &mut prepared)) {
            None => (run, 0, Duration::ZERO),
            Some(Ok(s)) => {
                share = s;
                (&share.run, share.index_base, share.lead)
            }
            Some(Err(note)) => return self.skip_share(run, total, &note),
        };
        self.lead.set(lead);
        let pool = RunConfig {
            load: execute::engine_load(run),
            duration: None,
            grace: Duration::ZERO,
        }
        .pool_size();
        let endpoint = Endpoint::new(target, pool).map_err(|source| SuiteError::Endpoint {
            endpoint: run.settings.endpoint.name.clone(),
            source,
        })?;
        let warnings = first_warnings(&notes, &prepared, pool);
        self.begin(run, total, &warnings)?;
        let (server, telemetry) = server_scrapes(run, target)?;
        let stop = self.run_stop(run);
        let ctx = RunContext {
            store: self.store.clone(),
            endpoint: &endpoint,
            cancel: &stop.cancel,
            saturation: stop.watch.as_ref(),
            slos: self.slos,
            definitions: self.plan.spec.plan.metric_definitions,
            label: run_label(run, total),
            log: self.log.clone(),
            watch: RunTelemetry {
                server: Some(server),
                plan: telemetry,
                server_log: self.launched_log(run)?,
                store: self.store.clone(),
            },
            index_base,
            start: Start {
                at: self.start_at.take(),
                meet: self.barrier.as_deref().map(|barrier| Meet {
                    barrier,
                    run: &run.id,
                    facts: &self.met,
                }),
                lead,
            },
            keep: self.plan.spec.plan.store,
            slice: self.plan.spec.report.slice_width(),
            trust: &self.trust,
        };
        let mut result = match execute::execute(&ctx, run, prepared).await {
            Ok(result) => result,
            Err(e @ SuiteError::Barrier { .. }) => {
                self.finish_failed(run, &e)?;
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        stop.mark(self.cancel.is_cancelled(), &mut result);
        keep_replicas(target, &mut result);
        self.finish(run, total, warnings, &result)
    }

    /// Prints the run's warnings so far, begins the run in the store and says so.
    fn begin(
        &self,
        run: &RunSpec,
        total: usize,
        warnings: &[RunWarning],
    ) -> Result<(), SuiteError> {
        for w in warnings {
            self.log
                .say(&format!("warning: {}: {w}", run_label(run, total)));
        }
        self.lock()?.begin_run(&run.id)?;
        self.log.event(serde_json::json!({
            "event": "run_start", "run": run.id, "ordinal": run.ordinal, "of": total,
            "axes": run.axes,
        }));
        Ok(())
    }

    /// Stores how the executed run ended (status, metrics, facts, every warning) and
    /// prints its summary line.
    fn finish(
        &self,
        run: &RunSpec,
        total: usize,
        warnings: Vec<RunWarning>,
        result: &RunResult,
    ) -> Result<Ended, SuiteError> {
        let status = status_of(result);
        let mut facts = facts_of(result, self.shard);
        facts.barrier = self.met.borrow().clone();
        if self.shard.is_some() {
            facts.shard_lead_us = Some(self.lead.get().as_micros() as u64);
        }
        let mut all_warnings = warnings;
        for w in &result.warnings {
            self.log
                .say(&format!("warning: {}: {w}", run_label(run, total)));
        }
        all_warnings.extend(result.warnings.iter().cloned());
        let verdict = Verdict::judge(&all_warnings, &self.trust.accept);
        facts.evidence = Some(result.evidence.clone());
        let metrics = crate::workload::mix::stored_metrics(run, &result.summary, &result.classes);
        facts.mix = crate::workload::mix::facts(run, &result.classes);
        self.lock()?.finish_run(
            &run.id,
            &RunFinish {
                status,
                metrics: &metrics,
                facts: &facts,
                warnings: &all_warnings,
                error: result.all_failed.as_deref(),
                verdict: Some(&verdict).filter(|_| status == RunStatus::Done),
            },
        )?;
        let sent = Sent {
            records: result.sent,
            written: result.stored,
            measured: result.summary.requests,
        };
        let checked = counts::check(&*self.lock()?, &run.id, sent);
        if let Err(e) = checked {
            self.finish_failed(run, &e)?;
            return Err(e);
        }
        self.log.say(&summary_line(run, total, &result.summary));
        if status == RunStatus::Done && verdict.status > Status::Valid {
            self.log.say(&format!(
                "verdict: {}: {}",
                run_label(run, total),
                verdict.summary()
            ));
        }
        if let Some(why) = &result.all_failed {
            self.log
                .say(&format!("error: {}: {why}", run_label(run, total)));
        }
        self.log.event(serde_json::json!({
            "event": "run_end", "run": run.id, "status": status.as_str(),
            "verdict": verdict, "metrics": result.summary.values,
        }));
        Ok(Ended {
            completed: !result.cancelled,
            failed_requests: result.summary.failures.values().sum(),
            failed_run: result.all_failed.is_some(),
        })
    }

    /// A run this shard has no share of: stored done, with no requests and the note.
    fn skip_share(&self, run: &RunSpec, total: usize, note: &str) -> Result<Ended, SuiteError> {
        self.log
            .say(&format!("note: {}: {note}", run_label(run, total)));
        let mut store = self.lock()?;
        store.begin_run(&run.id)?;
        let shard = self.shard.map(|s| s.to_string());
        store.finish_run(
            &run.id,
            &RunFinish {
                status: RunStatus::Done,
                metrics: &Default::default(),
                facts: &RunFacts {
                    shard: Some(shard),
                    shard_share: Some(0),
                    ..RunFacts::default()
                },
                warnings: &[RunWarning::new(Code::Shards, note)],
                error: None,
                verdict: None,
            },
        )?;
        Ok(Ended {
            completed: true,
            failed_requests: 0,
            failed_run: false,
        })
    }
}

/// The URL of each replica number the rows keep (`report --by-replica`).
fn keep_replicas(target: &Target, result: &mut RunResult) {
    if !target.replicas.is_empty() {
        result.traffic.replicas = Some(target.replicas.clone());
    }
}

/// The warnings a run has before it starts: the suite's notes (a failed cache reset),
/// the dataset's, and the client's connection limit.
fn first_warnings(notes: &[String], prepared: &PreparedRun, pool: usize) -> Vec<RunWarning> {
    let mut warnings: Vec<RunWarning> = notes.iter().map(|n| RunWarning::from_legacy(n)).collect();
    warnings.extend(all_as(Code::Dataset, prepared.warnings.iter().cloned()));
    warnings.extend(all_as(
        Code::Connections,
        crate::engine::limits::connection_limit_problem(pool as u64),
    ));
    warnings
}

/// The stored status of an executed run: interrupted, failed (no measured request
/// succeeded) or done.
fn status_of(result: &RunResult) -> RunStatus {
    if result.cancelled {
        RunStatus::Interrupted
    } else if result.all_failed.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Done
    }
}

/// The facts stored with an executed run: its counts, input lengths, time, traffic and
/// shard.
fn facts_of(result: &RunResult, shard: Option<Shard>) -> RunFacts {
    let traffic = result.traffic.clone();
    let mut facts = RunFacts {
        input_lengths: Some(result.input_lengths),
        time: Some(result.time.clone()),
        preconnect: result.preconnect.as_ref().map(|p| p.facts()),
        cancel_settle: result.settle.as_ref().map(|s| s.facts()),
        server_counts: result.server_counts.clone(),
        turn_of_item: traffic.turn_of_item,
        conversation_errors: traffic.conversation_errors,
        trace_request_ids: traffic.trace_request_ids,
        replicas: traffic.replicas,
        ..result.summary.facts(result.stored)
    };
    shard_facts(&mut facts, shard, result.started);
    facts
}

/// The run's scrapes of its server: the cache counters around the measured pass, and the
/// telemetry pages during it.
fn server_scrapes(
    run: &RunSpec,
    target: &Target,
) -> Result<(ServerScrape, Option<TelemetryPlan>), SuiteError> {
    let spec = &run.settings.endpoint.spec;
    let control = |source| SuiteError::Control {
        endpoint: run.settings.endpoint.name.clone(),
        source,
    };
    let replicas = target.each_replica();
    let mut server = ServerScrape::new(
        target.control_spec(),
        CounterNames::candidates(spec.metrics.as_ref()),
    )
    .map_err(control)?;
    for other in replicas.iter().skip(1) {
        server = server.with_replica(other.control_spec()).map_err(control)?;
    }
    // Every replica's pages (each stored under its own URL).
    let mut telemetry: Option<TelemetryPlan> = None;
    for replica in &replicas {
        let more = crate::telemetry::plan(
            replica.control_spec(),
            spec.telemetry.as_ref(),
            spec.metrics.as_ref(),
        )
        .map_err(control)?;
        telemetry = match (telemetry, more) {
            (Some(mut all), Some(more)) => {
                for t in more.targets {
                    if !all.targets.iter().any(|a| a.url == t.url) {
                        all.targets.push(t);
                    }
                }
                Some(all)
            }
            (all, more) => all.or(more),
        };
    }
    Ok((server, telemetry))
}

impl Suite<'_> {
    /// The log of the run's launched server (`servers/<endpoint>.log` beside the
    /// database), if perfplan launched it.
    fn launched_log(&self, run: &RunSpec) -> Result<Option<std::path::PathBuf>, SuiteError> {
        if run.settings.endpoint.spec.launch.is_none() {
            return Ok(None);
        }
        let db = self.lock()?.path().to_path_buf();
        let name = &run.settings.endpoint.name;
        Ok(db
            .parent()
            .map(|dir| dir.join("servers").join(format!("{name}.log"))))
    }
}
