//! A suite: the output folder and database, the simulators, the connection tests, then
//! every run in order (finished ones skipped on `--resume`), Ctrl-C handling, and the
//! pause between runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::cache;
use super::execute::{self, RunContext};
use super::lifecycle::{self, Servers};
use super::log::SuiteLog;
use super::prepare::{self, PreparedRun};
use super::scrape::{CounterNames, ServerScrape};
use super::shard::{shard_extras, Shard, ShardOptions};
use super::sims::Sims;
use super::{connect, RunnerError};
use crate::engine::{CancelHandle, Endpoint, RunConfig, Target, Timeouts};
use crate::plan::LoadedPlan;
use crate::planner::{display_value, RunSpec};
use crate::store::{GitInfo, HostFacts, RunFinish, RunRow, RunStatus, Store, SuiteInfo};
use crate::tokenize::TokenizerCache;

// SLA-search runs: a child module, so it can drive `Suite::one` for each probe.
#[path = "search.rs"]
mod search;

/// How to run a suite.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Output folder; default `outputs/<plan name>/<UTC timestamp>/`.
    pub out: Option<PathBuf>,
    /// Continue the suite in this folder: finished runs are skipped.
    pub resume: Option<PathBuf>,
    /// Log every request body and response in `perfplan.log`.
    pub debug: bool,
    /// Append JSON progress events (run start, progress, run end, suite end) to this file.
    pub progress_json: Option<PathBuf>,
}

/// How a suite ended.
#[derive(Debug, Clone)]
pub struct SuiteOutcome {
    pub dir: PathBuf,
    pub done: usize,
    pub skipped: usize,
    pub failed: usize,
    pub interrupted: bool,
}

/// `YYYYMMDDTHHMMSSZ` in UTC.
pub fn utc_stamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn suite_info(plan: &LoadedPlan) -> SuiteInfo {
    let texts = plan.file_texts();
    let (main, imports) = texts
        .split_first()
        .map_or((String::new(), Vec::new()), |(m, rest)| {
            (m.1.clone(), rest.to_vec())
        });
    let mut info = SuiteInfo::new(plan.spec.plan.name.clone(), main);
    info.plan_path = Some(plan.path.display().to_string());
    info.imports = imports;
    info.set_overrides = plan.sets.clone();
    info.seed = plan.spec.plan.seed;
    info.git = GitInfo::detect(if plan.base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        &plan.base_dir
    });
    info.host = HostFacts::detect();
    info.report = serde_json::to_value(&plan.spec.report).unwrap_or(Value::Null);
    info.gates = serde_json::to_value(&plan.spec.gates).unwrap_or(Value::Null);
    info.slo = serde_json::to_value(&plan.spec.slo).unwrap_or(Value::Null);
    info
}

fn open_store(plan: &LoadedPlan, opts: &RunOptions) -> Result<(Store, PathBuf), RunnerError> {
    if let Some(dir) = &opts.resume {
        return Ok((Store::open_resume(dir)?, dir.clone()));
    }
    let dir = opts.out.clone().unwrap_or_else(|| {
        Path::new("outputs")
            .join(&plan.spec.plan.name)
            .join(utc_stamp(SystemTime::now()))
    });
    std::fs::create_dir_all(&dir).map_err(|source| RunnerError::Output {
        path: dir.clone(),
        source,
    })?;
    Ok((Store::create(&dir, &suite_info(plan))?, dir))
}

/// The label of a run in progress lines: its varying axes.
pub fn run_label(run: &RunSpec, total: usize) -> String {
    let axes: Vec<String> = run
        .axes
        .iter()
        .map(|(k, v)| format!("{k}={}", display_value(v)))
        .collect();
    // With `--only`, ordinals can exceed the number of selected runs: show the ordinal alone.
    let position = if run.ordinal <= total {
        format!("{}/{total}", run.ordinal)
    } else {
        format!("#{}", run.ordinal)
    };
    format!("run {position} {} {}", run.id, axes.join(" "))
}

pub(super) fn target(run: &RunSpec, sims: &Sims) -> Target {
    let ep = &run.settings.endpoint.spec;
    let api_key = ep
        .api_key_env
        .as_deref()
        .and_then(|v| std::env::var(v).ok())
        .filter(|k| !k.is_empty());
    Target {
        base_url: sims.resolve(&ep.base_url),
        api_key,
        headers: ep
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        timeouts: Timeouts {
            connect: ep.timeouts.connect.0,
            read: ep.timeouts.read.0,
            total: Some(ep.timeouts.total.0),
        },
        ..Target::default()
    }
}

/// Runs the suite. Errors that stop the whole suite are returned; a run that fails is
/// stored as failed and the suite goes on.
pub fn run_suite(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    opts: &RunOptions,
) -> Result<SuiteOutcome, RunnerError> {
    run_suite_sharded(plan, runs, opts, ShardOptions::default())
}

/// `run_suite` as one shard of a run split across machines (see `shard`).
pub fn run_suite_sharded(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    opts: &RunOptions,
    sharding: ShardOptions,
) -> Result<SuiteOutcome, RunnerError> {
    let ordered = cache::execution_order(runs);
    let runs = &ordered[..];
    let (mut store, dir) = open_store(plan, opts)?;
    if let Some(shard) = sharding.shard {
        store.mark_shard(&shard.to_string())?;
    }
    let log = Arc::new(SuiteLog::open(
        &dir,
        opts.debug,
        opts.progress_json.as_deref(),
    ));
    log.say(&format!("perfplan: results in {}", dir.display()));
    let store = register(store, runs)?;
    let slos = execute::slos_of(&plan.spec.slo)?;
    warn_missing_keys(runs, &log);
    let sims = Sims::start(runs, &plan.base_dir)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RunnerError::Runtime)?;
    let cancel = CancelHandle::new();
    let mut servers = Servers::new(&dir);
    let watcher = rt.spawn(watch_ctrl_c(
        cancel.clone(),
        log.clone(),
        servers.registry(),
    ));
    let suite = Suite {
        plan,
        store: &store,
        sims: &sims,
        cancel: &cancel,
        slos: &slos,
        cache: TokenizerCache::new(),
        log: &log,
        shard: sharding.shard,
        start_at: std::cell::Cell::new(sharding.start_at),
    };
    let result = rt.block_on(async {
        let result = suite.run_all(runs, dir, &mut servers).await;
        servers.stop_all().await;
        result
    });
    watcher.abort();
    sims.shutdown();
    result
}

fn register(mut store: Store, runs: &[RunSpec]) -> Result<Arc<Mutex<Store>>, RunnerError> {
    let rows: Vec<RunRow> = runs
        .iter()
        .map(|r| RunRow {
            id: r.id.clone(),
            ordinal: r.ordinal as u32,
            axes: Value::Object(r.axes.clone()),
            settings: r.redacted_settings(),
        })
        .collect();
    store.register_runs(&rows)?;
    Ok(Arc::new(Mutex::new(store)))
}

fn warn_missing_keys(runs: &[RunSpec], log: &SuiteLog) {
    let mut warned = BTreeSet::new();
    for run in runs {
        let ep = &run.settings.endpoint;
        if let Some(var) = ep.spec.api_key_env.as_deref() {
            if std::env::var(var).is_err() && warned.insert(var.to_string()) {
                log.say(&format!(
                    "warning: endpoint `{}`: ${var} is not set; sending no API key",
                    ep.name
                ));
            }
        }
    }
}

/// First Ctrl-C: stop sending, let requests in flight finish. Second: exit at once.
async fn watch_ctrl_c(cancel: CancelHandle, log: Arc<SuiteLog>, launched: lifecycle::Registry) {
    if tokio::signal::ctrl_c().await.is_ok() {
        log.say(
            "\nperfplan: interrupted; letting requests in flight finish (Ctrl-C again to abort)",
        );
        cancel.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
            lifecycle::kill_registered(&launched);
            std::process::exit(130);
        }
    }
}

struct Suite<'a> {
    plan: &'a LoadedPlan,
    store: &'a Arc<Mutex<Store>>,
    sims: &'a Sims,
    cancel: &'a CancelHandle,
    slos: &'a [crate::metrics::Slo],
    cache: TokenizerCache,
    log: &'a Arc<SuiteLog>,
    shard: Option<Shard>,
    /// `--start-at`, until the first run's load takes it.
    start_at: std::cell::Cell<Option<SystemTime>>,
}

impl Suite<'_> {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Store>, RunnerError> {
        self.store.lock().map_err(|_| RunnerError::Poisoned)
    }

    async fn run_all(
        &self,
        runs: &[RunSpec],
        dir: PathBuf,
        servers: &mut Servers,
    ) -> Result<SuiteOutcome, RunnerError> {
        let mut outcome = SuiteOutcome {
            dir,
            done: 0,
            skipped: 0,
            failed: 0,
            interrupted: false,
        };
        let mut tested: BTreeSet<String> = BTreeSet::new();
        let mut previous: BTreeMap<String, &RunSpec> = BTreeMap::new();
        let last_of: BTreeMap<&str, usize> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.settings.endpoint.name.as_str(), i))
            .collect();
        for (i, run) in runs.iter().enumerate() {
            let ep = &run.settings.endpoint;
            if i > 0 && last_of.get(runs[i - 1].settings.endpoint.name.as_str()) == Some(&(i - 1)) {
                servers.stop(&runs[i - 1].settings.endpoint.name).await;
            }
            if self.cancel.is_cancelled() {
                outcome.interrupted = true;
                break;
            }
            if self.lock()?.run_status(&run.id)? == RunStatus::Done {
                self.log.say(&format!(
                    "{}: done in an earlier attempt, skipped",
                    run_label(run, runs.len())
                ));
                outcome.skipped += 1;
                continue;
            }
            let mut target = target(run, self.sims);
            let port = match server_up(run, &mut target, servers).await {
                Ok(port) => port,
                Err(e) => {
                    self.log.say(&format!(
                        "error: {}: {}",
                        run_label(run, runs.len()),
                        chain(&e)
                    ));
                    self.fail(run, &e)?;
                    outcome.failed += 1;
                    continue;
                }
            };
            let mut notes = Vec::new();
            if cache::wants_reset(run, previous.get(&ep.name).copied()) {
                notes.extend(lifecycle::reset_warning(&ep.spec, port, &target).await);
            }
            previous.insert(ep.name.clone(), run);
            if ep.spec.connection_test && tested.insert(ep.name.clone()) {
                let deadline = ep
                    .spec
                    .ready_timeout
                    .map_or(connect::CONNECT_DEADLINE, |d| d.0);
                connect::test(&ep.name, &target, deadline).await?;
            }
            let result = if run.settings.load.search.is_some() {
                self.search(run, &target, runs.len(), notes).await
            } else {
                self.one(run, &target, runs.len(), notes).await
            };
            match self.server_died(run, &result, servers, runs.len())? {
                true => outcome.failed += 1,
                false => self.count(run, result, &mut outcome, runs.len())?,
            }
            if let Some(pause) = self.plan.spec.plan.pause_between_runs {
                if i + 1 < runs.len() {
                    tokio::time::sleep(pause.0).await;
                }
            }
        }
        self.log.event(serde_json::json!({
            "event": "suite_end", "done": outcome.done, "skipped": outcome.skipped,
            "failed": outcome.failed, "interrupted": outcome.interrupted,
        }));
        Ok(outcome)
    }

    /// Whether the run's launched server died during it (the run then failed, with the log
    /// tail). A run whose requests all succeeded stands; the death shows at the next run.
    fn server_died(
        &self,
        run: &RunSpec,
        result: &Result<Ended, RunnerError>,
        servers: &mut Servers,
        total: usize,
    ) -> Result<bool, RunnerError> {
        let name = &run.settings.endpoint.name;
        match (result, servers.alive(name)) {
            (Ok(end), Err(source)) if end.failed_requests > 0 => {
                let e = RunnerError::Server {
                    endpoint: name.clone(),
                    source,
                };
                self.log
                    .say(&format!("error: {}: {}", run_label(run, total), chain(&e)));
                self.finish_failed(run, &e)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Counts how a run ended; a failed run is stored as failed.
    fn count(
        &self,
        run: &RunSpec,
        result: Result<Ended, RunnerError>,
        outcome: &mut SuiteOutcome,
        total: usize,
    ) -> Result<(), RunnerError> {
        match result {
            Ok(end) if end.failed_run => outcome.failed += 1,
            Ok(end) if end.completed => outcome.done += 1,
            Ok(_) => outcome.interrupted = true,
            Err(e) if !e.stops_suite() => {
                self.log
                    .say(&format!("error: {}: {}", run_label(run, total), chain(&e)));
                self.fail(run, &e)?;
                outcome.failed += 1;
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn fail(&self, run: &RunSpec, e: &RunnerError) -> Result<(), RunnerError> {
        self.lock()?.begin_run(&run.id)?;
        self.finish_failed(run, e)
    }

    /// Marks a run failed, keeping the requests it stored.
    fn finish_failed(&self, run: &RunSpec, e: &RunnerError) -> Result<(), RunnerError> {
        let mut store = self.lock()?;
        let empty = Default::default();
        let msg = chain(e);
        store.finish_run(
            &run.id,
            &RunFinish {
                status: RunStatus::Failed,
                metrics: &empty,
                extras: &Value::Null,
                warnings: &[],
                error: Some(&msg),
            },
        )?;
        Ok(())
    }

    /// One run; `Ok(false)` when it was interrupted.
    async fn one(
        &self,
        run: &RunSpec,
        target: &Target,
        total: usize,
        notes: Vec<String>,
    ) -> Result<Ended, RunnerError> {
        let mut prepared: PreparedRun = prepare::prepare(run, &self.plan.base_dir, &self.cache)?;
        let share;
        let (run, index_base, lead) = match self.shard.map(|s| s.take_share(run, &mut prepared)) {
            None => (run, 0, Duration::ZERO),
            Some(Ok(s)) => {
                share = s;
                (&share.run, share.index_base, share.lead)
            }
            Some(Err(note)) => return self.skip_share(run, total, &note),
        };
        let pool = RunConfig {
            load: execute::engine_load(&run.settings.load, 0),
            duration: None,
            grace: Duration::ZERO,
        }
        .pool_size();
        let endpoint = Endpoint::new(target, pool).map_err(|source| RunnerError::Endpoint {
            endpoint: run.settings.endpoint.name.clone(),
            source,
        })?;
        let mut warnings = notes;
        warnings.extend(prepared.warnings.iter().cloned());
        warnings.extend(crate::engine::limits::connection_limit_problem(pool as u64));
        for w in &warnings {
            self.log
                .say(&format!("warning: {}: {w}", run_label(run, total)));
        }
        self.lock()?.begin_run(&run.id)?;
        self.log.event(serde_json::json!({
            "event": "run_start", "run": run.id, "ordinal": run.ordinal, "of": total,
            "axes": run.axes,
        }));
        let ctx = RunContext {
            store: self.store.clone(),
            endpoint: &endpoint,
            cancel: self.cancel,
            slos: self.slos,
            definitions: self.plan.spec.plan.metric_definitions,
            label: run_label(run, total),
            log: self.log.clone(),
            server: Some(ServerScrape::new(
                &target.base_url,
                CounterNames::of(run.settings.endpoint.spec.metrics.as_ref()),
            )),
            index_base,
            start_at: super::shard::load_start(self.start_at.take(), lead),
        };
        let result = execute::execute(&ctx, run, prepared).await?;
        let status = if result.cancelled {
            RunStatus::Interrupted
        } else if result.all_failed.is_some() {
            RunStatus::Failed
        } else {
            RunStatus::Done
        };
        let mut extras = execute::extras(&result.summary, result.stored);
        if let Value::Object(map) = &mut extras {
            map.insert("input_lengths".into(), result.input_lengths.clone());
        }
        if let (Some(Value::Object(more)), Value::Object(map)) = (&result.traffic, &mut extras) {
            map.extend(more.clone());
        }
        shard_extras(&mut extras, self.shard, result.started);
        let mut all_warnings = warnings;
        for w in &result.warnings {
            self.log
                .say(&format!("warning: {}: {w}", run_label(run, total)));
        }
        all_warnings.extend(result.warnings.iter().cloned());
        if let Some(reason) = &result.summary.client_bound {
            all_warnings.push(format!("client_bound: {reason}"));
        }
        self.lock()?.finish_run(
            &run.id,
            &RunFinish {
                status,
                metrics: &result.summary.values,
                extras: &extras,
                warnings: &all_warnings,
                error: result.all_failed.as_deref(),
            },
        )?;
        self.log.say(&summary_line(run, total, &result.summary));
        if let Some(why) = &result.all_failed {
            self.log
                .say(&format!("error: {}: {why}", run_label(run, total)));
        }
        self.log.event(serde_json::json!({
            "event": "run_end", "run": run.id, "status": status.as_str(),
            "metrics": result.summary.values,
        }));
        Ok(Ended {
            completed: !result.cancelled,
            failed_requests: result.summary.failures.values().sum(),
            failed_run: result.all_failed.is_some(),
        })
    }
}

impl Suite<'_> {
    /// A run this shard has no share of: stored done, with no requests and the note.
    fn skip_share(&self, run: &RunSpec, total: usize, note: &str) -> Result<Ended, RunnerError> {
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
                extras: &serde_json::json!({ "shard": shard, "shard_share": 0 }),
                warnings: &[note.to_string()],
                error: None,
            },
        )?;
        Ok(Ended {
            completed: true,
            failed_requests: 0,
            failed_run: false,
        })
    }
}

/// How a run ended: completed (not interrupted), and how many of its requests failed.
struct Ended {
    pub(super) completed: bool,
    pub(super) failed_requests: u64,
    /// Every measured request failed: the run is stored as failed.
    pub(super) failed_run: bool,
}

/// Fills the `{port}` of a launched endpoint and makes sure its server is up.
pub(super) async fn server_up(
    run: &RunSpec,
    target: &mut Target,
    servers: &mut Servers,
) -> Result<Option<u16>, RunnerError> {
    let ep = &run.settings.endpoint;
    let err = |source| RunnerError::Server {
        endpoint: ep.name.clone(),
        source,
    };
    let port = servers.port(&ep.name, &ep.spec).map_err(err)?;
    target.base_url = lifecycle::fill_port(&target.base_url, port);
    servers
        .ensure(&ep.name, &ep.spec, &target.base_url)
        .await
        .map_err(err)?;
    Ok(port)
}

fn summary_line(run: &RunSpec, total: usize, s: &crate::metrics::RunSummary) -> String {
    let get = |k: &str| s.values.get(k).copied().flatten();
    let ok = get("requests_ok").unwrap_or(0.0);
    let failed = get("requests_failed").unwrap_or(0.0);
    let fmt = |v: Option<f64>, unit: &str| v.map_or("—".to_string(), |x| format!("{x:.1}{unit}"));
    format!(
        "{}: {ok:.0} ok, {failed:.0} failed, {} req/s, ttft p50 {}, tpot mean {}",
        run_label(run, total),
        fmt(get("rps"), ""),
        fmt(get("ttft_p50"), "ms"),
        fmt(get("tpot_mean"), "ms")
    )
}

/// An error with its sources, `a: b: c`.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamp_formats_civil_time() {
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101T000000Z");
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(1_795_938_471)),
            "20261129T074751Z"
        );
    }
}
