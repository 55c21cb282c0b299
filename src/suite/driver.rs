//! A suite: the output folder and database, the simulators, the connection tests, then
//! every run in order (finished ones skipped on `--resume`), Ctrl-C handling, and the
//! pause between runs. This file owns the driver (`run_suite`) and the state a suite
//! shares across its runs; its children own the parts: `open` (the output folder and
//! database), `runs` (the per-run loop), `one` (one run on the engine), `text` (what the
//! suite prints). SLA-search runs go to the [`SearchDriver`] the caller hands in.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::SuiteError;
use crate::distribute::barrier::StartBarrier;
use crate::distribute::shard::{Shard, ShardOptions};
use crate::engine::{CancelHandle, Target};
use crate::live::log::SuiteLog;
use crate::plan::LoadedPlan;
use crate::planner::RunSpec;
use crate::servers::sims::Sims;
use crate::servers::Servers;
use crate::store::Store;
use crate::tokenize::TokenizerCache;

mod before;
mod one;
mod open;
mod runs;
pub(crate) mod saturation;
mod signals;
mod text;

pub use one::Ended;
pub use open::fingerprint;
pub use runs::response_limits;
pub(crate) use runs::{server_up, target};
pub use signals::resume_command;
pub use text::run_label;

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
    /// `--progress-every`: the interval of progress lines (`Some(ZERO)`: none; `None`:
    /// every 10 s when stderr is not a terminal, none on one).
    pub progress_every: Option<std::time::Duration>,
    /// Who runs the plan's SLA searches (`search::DRIVER`); a plan with a search and no
    /// driver stops at that run with an error naming it.
    pub search: Option<&'static dyn SearchDriver>,
    /// A shard's start barrier (`distribute::barrier`): every run's load starts when all
    /// shards have met it.
    pub barrier: Option<Arc<dyn StartBarrier>>,
    /// `run --accept CODE`: verdict reasons accepted besides the plan's `[trust] accept`.
    pub accept: Vec<crate::trust::Code>,
    /// The command line that started the suite, without its output folder: said with
    /// `--resume DIR` when Ctrl-C or SIGTERM interrupts the suite (`None`: nothing said).
    pub resume_args: Option<Vec<String>>,
    /// Tokenizers loaded before the suite (by `run`'s check of its files): the suite
    /// loads only those it does not hold.
    pub tokenizers: TokenizerCache,
    /// Told of every run once it is stored (`run --export`'s exporters).
    pub sinks: crate::live::sink::Sinks,
}

/// Runs one SLA-search run of a suite: each trial a run of its own through
/// [`Suite::one`], the trials pooled into a verdict. The `search` stage implements it and
/// the caller hands it in ([`RunOptions::search`]), so the suite names nothing of it.
pub trait SearchDriver: Sync + std::fmt::Debug {
    fn search<'a>(
        &'a self,
        suite: &'a Suite<'a>,
        run: &'a RunSpec,
        target: &'a Target,
        total_and_notes: (usize, Vec<String>),
    ) -> Pin<Box<dyn Future<Output = Result<Ended, SuiteError>> + 'a>>;
}

/// How a suite ended.
#[derive(Debug, Clone, Default)]
pub struct SuiteOutcome {
    pub dir: PathBuf,
    pub done: usize,
    pub skipped: usize,
    pub failed: usize,
    pub interrupted: bool,
}

/// Runs the suite. Errors that stop the whole suite are returned; a run that fails is
/// stored as failed and the suite goes on.
pub fn run_suite(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    opts: &RunOptions,
) -> Result<SuiteOutcome, SuiteError> {
    run_suite_sharded(plan, runs, opts, ShardOptions::default())
}

/// `run_suite` as one shard of a run split across machines (see `shard`).
pub fn run_suite_sharded(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    opts: &RunOptions,
    sharding: ShardOptions,
) -> Result<SuiteOutcome, SuiteError> {
    let ordered = crate::planner::order::execution_order(runs);
    let redactor = suite_redactor(plan, &ordered);
    // Endpoints and models first: a suite that cannot send leaves no folder behind.
    let before = before::before_the_suite(plan, &ordered, &redactor)?;
    let environment = open::environment_of(plan, &ordered);
    let (store, dir) = match open::open_store(plan, opts, sharding.shard, environment) {
        Ok(opened) => opened,
        Err(e) => {
            before.sims.shutdown();
            return Err(e);
        }
    };
    let db = store.path().to_path_buf();
    let opened = Opened {
        store,
        dir,
        before,
        redactor,
    };
    run_in(plan, &ordered, opts, sharding, opened).map_err(|e| e.at_database(&db))
}

/// A suite's folder and database, opened after what it checks before them.
struct Opened {
    store: Store,
    dir: PathBuf,
    before: before::Before,
    redactor: crate::secrets::Redactor,
}

/// The suite in its opened database.
fn run_in(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    opts: &RunOptions,
    sharding: ShardOptions,
    opened: Opened,
) -> Result<SuiteOutcome, SuiteError> {
    let Opened {
        mut store,
        dir,
        before,
        redactor,
    } = opened;
    let before::Before {
        sims,
        rt,
        tested,
        read,
        said,
    } = before;
    if let Some(shard) = sharding.shard {
        store.mark_shard(&shard.to_string())?;
    }
    for (endpoint, facts) in read {
        store.record_endpoint(&endpoint, facts)?;
    }
    let log = Arc::new(
        SuiteLog::open(&dir, opts.debug, opts.progress_json.as_deref())
            .with_redactor(redactor)
            .with_progress_every(crate::live::progress::line_interval(opts.progress_every)),
    );
    for line in &said {
        log.write_only(line);
    }
    log.say(&format!("perfplan: results in {}", dir.display()));
    let store = open::register(store, runs)?;
    let slos = crate::metrics::slo::slos_of(&plan.spec.slo)?;
    warn_missing_keys(runs, &log);
    let cancel = CancelHandle::new();
    let mut servers = Servers::new(&dir);
    let resume = opts
        .resume_args
        .as_ref()
        .map(|args| signals::resume_command(args, &dir));
    let watcher = rt.spawn(signals::watch(
        cancel.clone(),
        log.clone(),
        servers.registry(),
        resume,
    ));
    let suite = Suite {
        plan,
        store: &store,
        sims: &sims,
        cancel: &cancel,
        slos: &slos,
        cache: opts.tokenizers.clone(),
        log: &log,
        shard: sharding.shard,
        start_at: std::cell::Cell::new(sharding.start_at),
        search: opts.search,
        barrier: opts.barrier.clone(),
        met: std::cell::RefCell::new(None),
        lead: std::cell::Cell::new(std::time::Duration::ZERO),
        trust: trust_of(plan, opts),
        tested,
        sinks: &opts.sinks,
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

/// The verdict thresholds of the suite: the plan's `[trust]`, with `--accept`'s codes.
pub(crate) fn trust_of(plan: &LoadedPlan, opts: &RunOptions) -> crate::trust::Thresholds {
    let mut t = plan.spec.trust.thresholds();
    for c in &opts.accept {
        if !t.accept.contains(c) {
            t.accept.push(*c);
        }
    }
    t
}

/// The plan's secret header values and the API keys its endpoints read, for the log.
fn suite_redactor(plan: &LoadedPlan, runs: &[RunSpec]) -> crate::secrets::Redactor {
    let mut r = plan.secrets.redactor.clone();
    for run in runs {
        let ep = &run.settings.endpoint.spec;
        if let Some(key) = ep
            .api_key_env
            .as_deref()
            .and_then(|v| std::env::var(v).ok())
        {
            r.add(&key);
        }
        for (name, value) in &ep.headers {
            if crate::secrets::is_secret_header(name) {
                r.add(value);
            }
        }
    }
    r
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

/// A suite in progress: what its runs share.
pub struct Suite<'a> {
    pub(crate) plan: &'a LoadedPlan,
    store: &'a Arc<Mutex<Store>>,
    sims: &'a Sims,
    cancel: &'a CancelHandle,
    pub(crate) slos: &'a [crate::metrics::Slo],
    cache: TokenizerCache,
    log: &'a Arc<SuiteLog>,
    shard: Option<Shard>,
    /// `--start-at`, until the first run's load takes it.
    start_at: std::cell::Cell<Option<SystemTime>>,
    search: Option<&'static dyn SearchDriver>,
    barrier: Option<Arc<dyn StartBarrier>>,
    /// The current run's meeting at the barrier (its facts), once this shard met it.
    met: std::cell::RefCell<Option<crate::record::facts::BarrierFacts>>,
    /// The current run's lead on this shard (see `ShardShare::lead`).
    lead: std::cell::Cell<std::time::Duration>,
    /// `[trust]` and `--accept`: how each run's verdict is judged.
    pub(crate) trust: crate::trust::Thresholds,
    /// The endpoints connection-tested before the suite (`before`).
    tested: BTreeSet<String>,
    /// Told of each run once it is stored.
    sinks: &'a crate::live::sink::Sinks,
}

impl Suite<'_> {
    /// Says `line` on stderr and in `perfplan.log`.
    pub fn say(&self, line: &str) {
        self.log.say(line);
    }

    /// The suite's results database.
    pub fn lock(&self) -> Result<std::sync::MutexGuard<'_, Store>, SuiteError> {
        self.store.lock().map_err(|_| SuiteError::Poisoned)
    }
}
