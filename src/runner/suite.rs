//! A suite: the output folder and database, the simulators, the connection tests, then
//! every run in order (finished ones skipped on `--resume`), Ctrl-C handling, and the
//! pause between runs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::execute::{self, RunContext};
use super::log::SuiteLog;
use super::prepare::{self, PreparedRun};
use super::sims::Sims;
use super::{connect, RunnerError};
use crate::engine::{CancelHandle, Endpoint, RunConfig, Target, Timeouts};
use crate::plan::LoadedPlan;
use crate::planner::{display_value, RunSpec};
use crate::store::{GitInfo, HostFacts, RunFinish, RunRow, RunStatus, Store, SuiteInfo};
use crate::tokenize::TokenizerCache;

/// How to run a suite.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Output folder; default `outputs/<plan name>/<UTC timestamp>/`.
    pub out: Option<PathBuf>,
    /// Continue the suite in this folder: finished runs are skipped.
    pub resume: Option<PathBuf>,
    /// Log every request body and response in `perfplan.log`.
    pub debug: bool,
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
    format!(
        "run {}/{} {} {}",
        run.ordinal,
        total,
        run.id,
        axes.join(" ")
    )
}

fn target(run: &RunSpec, sims: &Sims) -> Target {
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
    let (store, dir) = open_store(plan, opts)?;
    let log = Arc::new(SuiteLog::open(&dir, opts.debug));
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
    let watcher = rt.spawn(watch_ctrl_c(cancel.clone(), log.clone()));
    let suite = Suite {
        plan,
        store: &store,
        sims: &sims,
        cancel: &cancel,
        slos: &slos,
        cache: TokenizerCache::new(),
        log: &log,
    };
    let result = rt.block_on(suite.run_all(runs, dir));
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
async fn watch_ctrl_c(cancel: CancelHandle, log: Arc<SuiteLog>) {
    if tokio::signal::ctrl_c().await.is_ok() {
        log.say(
            "\nperfplan: interrupted; letting requests in flight finish (Ctrl-C again to abort)",
        );
        cancel.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
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
}

impl Suite<'_> {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Store>, RunnerError> {
        self.store.lock().map_err(|_| RunnerError::Poisoned)
    }

    async fn run_all(&self, runs: &[RunSpec], dir: PathBuf) -> Result<SuiteOutcome, RunnerError> {
        let mut outcome = SuiteOutcome {
            dir,
            done: 0,
            skipped: 0,
            failed: 0,
            interrupted: false,
        };
        let mut tested: BTreeSet<String> = BTreeSet::new();
        for (i, run) in runs.iter().enumerate() {
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
            let target = target(run, self.sims);
            let ep = &run.settings.endpoint;
            if ep.spec.connection_test && tested.insert(ep.name.clone()) {
                let deadline = ep
                    .spec
                    .ready_timeout
                    .map_or(connect::CONNECT_DEADLINE, |d| d.0);
                connect::test(&ep.name, &target, deadline).await?;
            }
            match self.one(run, &target, runs.len()).await {
                Ok(true) => outcome.done += 1,
                Ok(false) => outcome.interrupted = true,
                Err(e) if !e.stops_suite() => {
                    self.log.say(&format!(
                        "error: {}: {}",
                        run_label(run, runs.len()),
                        chain(&e)
                    ));
                    self.fail(run, &e)?;
                    outcome.failed += 1;
                }
                Err(e) => return Err(e),
            }
            if let Some(pause) = self.plan.spec.plan.pause_between_runs {
                if i + 1 < runs.len() {
                    tokio::time::sleep(pause.0).await;
                }
            }
        }
        Ok(outcome)
    }

    fn fail(&self, run: &RunSpec, e: &RunnerError) -> Result<(), RunnerError> {
        let mut store = self.lock()?;
        store.begin_run(&run.id)?;
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
    async fn one(&self, run: &RunSpec, target: &Target, total: usize) -> Result<bool, RunnerError> {
        let prepared: PreparedRun = prepare::prepare(run, &self.plan.base_dir, &self.cache)?;
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
        let mut warnings = prepared.warnings.clone();
        warnings.extend(crate::engine::limits::connection_limit_problem(pool as u64));
        for w in &warnings {
            self.log
                .say(&format!("warning: {}: {w}", run_label(run, total)));
        }
        self.lock()?.begin_run(&run.id)?;
        let ctx = RunContext {
            store: self.store.clone(),
            endpoint: &endpoint,
            cancel: self.cancel,
            slos: self.slos,
            definitions: self.plan.spec.plan.metric_definitions,
            label: run_label(run, total),
            log: self.log.clone(),
        };
        let result = execute::execute(&ctx, run, prepared).await?;
        let status = if result.cancelled {
            RunStatus::Interrupted
        } else {
            RunStatus::Done
        };
        let extras = execute::extras(&result.summary, result.stored);
        let mut all_warnings = warnings;
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
                error: None,
            },
        )?;
        self.log.say(&summary_line(run, total, &result.summary));
        Ok(!result.cancelled)
    }
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
