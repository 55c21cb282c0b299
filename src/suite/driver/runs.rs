//! The per-run loop of a suite: for each run in order, the launched server of the
//! previous endpoint stopped when it is done with, finished runs skipped, the run's
//! server up, its cache reset and connection test, then the run (or SLA search) itself,
//! counted in the suite's outcome and told to the suite's sinks; a run that fails is
//! stored as failed and the loop goes on. Knows how a run ends, not how it runs on the
//! engine (`one`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::{run_label, Ended, Suite, SuiteOutcome};
use crate::control::{chain, Route, Tls};
use crate::engine::{ResponseLimits, Target, Timeouts};
use crate::planner::RunSpec;
use crate::probe::connect;
use crate::record::RunFacts;
use crate::servers::sims::Sims;
use crate::servers::{self, Servers};
use crate::store::{RunFinish, RunStatus};
use crate::suite::SuiteError;

/// What the loop remembers across runs: the endpoints already connection-tested, and
/// each endpoint's previous run (whether the cache needs a reset).
#[derive(Default)]
struct Seen<'r> {
    tested: BTreeSet<String>,
    /// Launched endpoints read for the environment (the others were, before the suite).
    described: BTreeSet<String>,
    previous: BTreeMap<String, &'r RunSpec>,
    /// Tiers stopped on saturation with `skip_higher` (`saturation`).
    stopped: Vec<super::saturation::StoppedTier>,
}

/// Longest wait for a launched server's exit to show after a run whose every request
/// failed.
const DYING: std::time::Duration = std::time::Duration::from_secs(1);

impl Suite<'_> {
    pub(super) async fn run_all(
        &self,
        runs: &[RunSpec],
        dir: PathBuf,
        servers: &mut Servers,
    ) -> Result<SuiteOutcome, SuiteError> {
        let mut outcome = SuiteOutcome {
            dir,
            ..SuiteOutcome::default()
        };
        let mut seen = Seen {
            tested: self.tested.clone(),
            ..Seen::default()
        };
        let last_of: BTreeMap<&str, usize> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.settings.endpoint.name.as_str(), i))
            .collect();
        for (i, run) in runs.iter().enumerate() {
            if i > 0 && last_of.get(runs[i - 1].settings.endpoint.name.as_str()) == Some(&(i - 1)) {
                servers.stop(&runs[i - 1].settings.endpoint.name).await;
            }
            if self.cancel.is_cancelled() {
                outcome.interrupted = true;
                break;
            }
            *self.met.borrow_mut() = None;
            self.turn(run, runs.len(), servers, &mut seen, &mut outcome)
                .await?;
            self.leave(run).await?;
            if let Some(pause) = self.plan.spec.plan.pause_between_runs {
                if i + 1 < runs.len() {
                    tokio::time::sleep(pause.0).await;
                }
            }
        }
        self.sinks.suite_ended(self.log);
        self.log.event(serde_json::json!({
            "event": "suite_end", "done": outcome.done, "skipped": outcome.skipped,
            "failed": outcome.failed, "interrupted": outcome.interrupted,
        }));
        Ok(outcome)
    }

    /// A run this shard did not start (done in an earlier attempt, no share, failed
    /// before its load) is passed at the start barrier, so the other shards go on.
    async fn leave(&self, run: &RunSpec) -> Result<(), SuiteError> {
        let Some(barrier) = &self.barrier else {
            return Ok(());
        };
        if self.met.borrow().is_some() {
            return Ok(());
        }
        barrier
            .pass(&run.id)
            .await
            .map_err(|source| SuiteError::Barrier {
                run: run.id.clone(),
                source,
            })
    }

    /// One run of the loop: skipped when done in an earlier attempt; else its server up,
    /// its cache reset and connection test, the run, and how it ended counted.
    async fn turn<'r>(
        &self,
        run: &'r RunSpec,
        total: usize,
        servers: &mut Servers,
        seen: &mut Seen<'r>,
        outcome: &mut SuiteOutcome,
    ) -> Result<(), SuiteError> {
        let ep = &run.settings.endpoint;
        if self.lock()?.run_status(&run.id)? == RunStatus::Done {
            self.log.say(&format!(
                "{}: done in an earlier attempt, skipped",
                run_label(run, total)
            ));
            outcome.skipped += 1;
            seen.stopped.extend(self.stopped_tier(run, total)?);
            return Ok(());
        }
        if self.skip_above(run, total, &seen.stopped)? {
            outcome.skipped += 1;
            return Ok(());
        }
        let mut target = target(run, self.sims, &self.plan.base_dir);
        let port = match server_up(run, &mut target, servers).await {
            Ok(port) => port,
            Err(e) => {
                self.log
                    .say(&format!("error: {}: {}", run_label(run, total), chain(&e)));
                self.fail(run, &e)?;
                outcome.failed += 1;
                return Ok(());
            }
        };
        let mut notes = Vec::new();
        if crate::planner::order::wants_reset(run, seen.previous.get(&ep.name).copied()) {
            let replicas = target.each_replica();
            let specs: Vec<_> = replicas.iter().map(Target::control_spec).collect();
            notes.extend(servers::reset_warning(&ep.spec, port, &specs).await);
        }
        seen.previous.insert(ep.name.clone(), run);
        let mut listed = Vec::new();
        if ep.spec.connection_test && seen.tested.insert(ep.name.clone()) {
            let say = |line: &str| self.log.say(line);
            let served =
                connect::test(&ep.name, &target, super::before::deadline(run), &say).await?;
            if let Some(line) = connect::served_line(&ep.name, &served) {
                say(&line);
            }
            connect::check_models(&ep.name, run, &served)?;
            listed = served.listed;
        }
        if ep.spec.launch.is_some() && seen.described.insert(ep.name.clone()) {
            self.describe(run, &target, listed).await?;
        }
        let result = if matches!(run.load.mode, crate::planner::Load::Search(_)) {
            match self.search {
                Some(driver) => driver.search(self, run, &target, (total, notes)).await,
                None => Err(SuiteError::NoSearchDriver {
                    run: run.id.clone(),
                }),
            }
        } else {
            self.one(run, &target, total, notes).await
        };
        match self.server_died(run, &result, servers, total).await? {
            true => outcome.failed += 1,
            false => self.count(run, result, outcome, total)?,
        }
        self.sinks.run_stored(self.log, &outcome.dir, &run.id).await;
        seen.stopped.extend(self.stopped_tier(run, total)?);
        Ok(())
    }

    /// Records what a launched endpoint says of itself, once its server is up.
    async fn describe(
        &self,
        run: &RunSpec,
        target: &Target,
        listed: Vec<crate::api::models::ListedModel>,
    ) -> Result<(), SuiteError> {
        let ep = &run.settings.endpoint;
        let redactor = self.log.redactor();
        let facts = crate::probe::describe::read(target, &ep.spec, listed, redactor).await;
        self.lock()?.record_endpoint(&ep.name, facts)?;
        Ok(())
    }

    /// Whether the run's launched server died during it (the run then failed, with the log
    /// tail). A run whose requests all succeeded stands; the death shows at the next run.
    /// A run whose every request failed waits up to [`DYING`] for its server's exit to
    /// show: a killed process closes its sockets (refusing connections) a moment before
    /// it can be seen to have exited.
    async fn server_died(
        &self,
        run: &RunSpec,
        result: &Result<Ended, SuiteError>,
        servers: &mut Servers,
        total: usize,
    ) -> Result<bool, SuiteError> {
        let name = &run.settings.endpoint.name;
        let mut alive = servers.alive(name);
        if matches!(result, Ok(end) if end.failed_run) && servers.launched(name) {
            let since = std::time::Instant::now();
            while alive.is_ok() && since.elapsed() < DYING {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                alive = servers.alive(name);
            }
        }
        match (result, alive) {
            (Ok(end), Err(source)) if end.failed_requests > 0 => {
                let e = SuiteError::Server {
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
        result: Result<Ended, SuiteError>,
        outcome: &mut SuiteOutcome,
        total: usize,
    ) -> Result<(), SuiteError> {
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

    pub fn fail(&self, run: &RunSpec, e: &SuiteError) -> Result<(), SuiteError> {
        self.lock()?.begin_run(&run.id)?;
        self.finish_failed(run, e)
    }

    /// Marks a run failed, keeping the requests it stored.
    pub(super) fn finish_failed(&self, run: &RunSpec, e: &SuiteError) -> Result<(), SuiteError> {
        let mut store = self.lock()?;
        let empty = Default::default();
        // The stored error hides what the log hides (a server's output may echo its key).
        let msg = self.log.redact(&chain(e)).into_owned();
        store.finish_run(
            &run.id,
            &RunFinish {
                status: RunStatus::Failed,
                metrics: &empty,
                facts: &RunFacts::default(),
                warnings: &[],
                error: Some(&msg),
                verdict: None,
            },
        )?;
        Ok(())
    }
}

/// The engine's target of a run's endpoint: its URL (a `sim://` one resolved), path
/// overrides, TLS (its files relative to the plan's folder `base_dir`), API key, headers and
/// timeouts.
pub(crate) fn target(run: &RunSpec, sims: &Sims, base_dir: &std::path::Path) -> Target {
    let ep = &run.settings.endpoint.spec;
    let api_key = ep
        .api_key_env
        .as_deref()
        .and_then(|v| std::env::var(v).ok())
        .filter(|k| !k.is_empty());
    let paths = ep
        .paths
        .entries()
        .into_iter()
        .filter_map(|(k, v)| Some((Route::parse(k)?, v.to_string())))
        .collect();
    let tls = ep.tls.as_ref().map_or_else(Tls::default, |t| Tls {
        ca_file: t.ca_file.as_ref().map(|f| base_dir.join(f)),
        insecure: t.insecure,
        cert_file: t.cert_file.as_ref().map(|f| base_dir.join(f)),
        key_file: t.key_file.as_ref().map(|f| base_dir.join(f)),
    });
    let replicas: Vec<String> = match ep.urls.is_empty() {
        true => sims.replicas(&ep.base_url),
        false => ep.urls.clone(),
    };
    Target {
        base_url: replicas
            .first()
            .cloned()
            .unwrap_or_else(|| sims.resolve(&ep.base_url)),
        replicas,
        balance: balance(ep.balance.unwrap_or_default(), run.dataset_seed),
        session_header: ep.session_header.clone(),
        paths,
        tls,
        api_key,
        headers: ep
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        timeouts: timeouts(&ep.timeouts),
        fresh_connections: ep.fresh_connections,
        limits: response_limits(&ep.limits),
        ..Target::default()
    }
}

/// The engine's rule of an endpoint's `balance`. `random` draws from the run's request-set
/// seed (`dataset_seed`): each run of a suite its own sequence, the same on rerun, and runs
/// that differ only by endpoint (same prompts) also the same replica draws, so comparing
/// endpoints compares like with like; a warm repeat (same requests) keeps its draws too.
fn balance(spec: crate::plan::Balance, seed: u64) -> crate::engine::Balance {
    match spec {
        crate::plan::Balance::RoundRobin => crate::engine::Balance::RoundRobin,
        crate::plan::Balance::Random => crate::engine::Balance::Random { seed },
        crate::plan::Balance::Session => crate::engine::Balance::Session,
    }
}

/// The engine's timeouts of an endpoint's `timeouts` (unset keys: `control::timeouts`).
fn timeouts(spec: &crate::plan::TimeoutsSpec) -> Timeouts {
    Timeouts {
        connect: spec.connect.0,
        read: spec.read.0,
        total: Some(spec.total.0),
    }
}

/// The engine's response limits from an endpoint's `limits` (unset keys: the defaults).
pub fn response_limits(spec: &crate::plan::limits::LimitsSpec) -> ResponseLimits {
    let d = ResponseLimits::default();
    let bytes = |v: Option<crate::units::HumanBytes>, default: usize| {
        v.map_or(default, |b| usize::try_from(b.0).unwrap_or(usize::MAX))
    };
    ResponseLimits {
        max_event: bytes(spec.max_event, d.max_event),
        max_body: bytes(spec.max_body, d.max_body),
        max_text: bytes(spec.max_text, d.max_text),
        overlong_factor: spec.overlong_factor.unwrap_or(d.overlong_factor),
        overlong_slack: spec.overlong_slack.unwrap_or(d.overlong_slack),
        max_chunks: spec.max_chunks.unwrap_or(d.max_chunks),
    }
}

/// Fills the `{port}` of a launched endpoint and makes sure its server is up.
pub(crate) async fn server_up(
    run: &RunSpec,
    target: &mut Target,
    servers: &mut Servers,
) -> Result<Option<u16>, SuiteError> {
    let ep = &run.settings.endpoint;
    let err = |source| SuiteError::Server {
        endpoint: ep.name.clone(),
        source,
    };
    let port = servers.port(&ep.name, &ep.spec).map_err(err)?;
    target.base_url = servers::fill_port(&target.base_url, port);
    for url in &mut target.replicas {
        *url = servers::fill_port(url, port);
    }
    for (_, path) in &mut target.paths {
        *path = servers::fill_port(path, port);
    }
    let replicas = target.each_replica();
    let specs: Vec<_> = replicas.iter().map(Target::control_spec).collect();
    servers
        .ensure(&ep.name, &ep.spec, &specs)
        .await
        .map_err(err)?;
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plans_default_timeouts_are_the_engines() {
        // One set of defaults (`control::timeouts`): an endpoint without `timeouts` gets
        // what the engine assumes, not 600 s without a total as the engine's copy had.
        let spec: crate::plan::TimeoutsSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(timeouts(&spec), Timeouts::default());
        assert_eq!(spec, crate::plan::TimeoutsSpec::default());
    }
}
