//! What a suite checks before its output folder exists: the simulators started, and each
//! endpoint perfplan does not launch connection-tested with the models its runs send
//! found on it (`connect`). A suite that fails here has sent no request and leaves no
//! folder behind. An endpoint perfplan launches is tested once its server is up, at its
//! first run (`runs`).

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::environment::EndpointFacts;
use crate::plan::LoadedPlan;
use crate::planner::RunSpec;
use crate::probe::connect;
use crate::servers::sims::Sims;
use crate::suite::SuiteError;

/// What the suite starts with: its simulators, its runtime, the endpoints already
/// tested, what each endpoint not launched said of itself (the environment), and the
/// lines said before the log existed (written into it once it does).
pub(in crate::suite) struct Before {
    pub sims: Sims,
    pub rt: tokio::runtime::Runtime,
    pub tested: BTreeSet<String>,
    pub read: Vec<(String, EndpointFacts)>,
    pub said: Vec<String>,
}

/// Starts the simulators and tests every endpoint that is not launched; an error has
/// stopped the simulators again.
pub(in crate::suite) fn before_the_suite(
    plan: &LoadedPlan,
    runs: &[RunSpec],
    redactor: &crate::secrets::Redactor,
) -> Result<Before, SuiteError> {
    let sims = Sims::start(runs, &plan.base_dir)?;
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            sims.shutdown();
            return Err(SuiteError::Runtime(e));
        }
    };
    let said = Mutex::new(Vec::new());
    let say = |line: &str| {
        let line = redactor.redact(line).into_owned();
        eprintln!("{line}");
        if let Ok(mut said) = said.lock() {
            said.push(line);
        }
    };
    let ctx = Ctx {
        plan,
        sims: &sims,
        redactor,
    };
    match rt.block_on(test_endpoints(&ctx, runs, &say)) {
        Ok((tested, read)) => Ok(Before {
            sims,
            rt,
            tested,
            read,
            said: said.into_inner().unwrap_or_default(),
        }),
        Err(e) => {
            sims.shutdown();
            Err(e)
        }
    }
}

/// What testing the endpoints needs.
struct Ctx<'a> {
    plan: &'a LoadedPlan,
    sims: &'a Sims,
    redactor: &'a crate::secrets::Redactor,
}

/// Each endpoint of `runs` with no `launch`, once: tested when it has a connection test
/// (the models of each of its runs found on it), and read for the environment.
async fn test_endpoints(
    ctx: &Ctx<'_>,
    runs: &[RunSpec],
    say: &(dyn Fn(&str) + Sync),
) -> Result<(BTreeSet<String>, Vec<(String, EndpointFacts)>), SuiteError> {
    let mut tested = BTreeSet::new();
    let mut read: Vec<(String, EndpointFacts)> = Vec::new();
    for run in runs {
        let ep = &run.settings.endpoint;
        if ep.spec.launch.is_some() || read.iter().any(|(n, _)| *n == ep.name) {
            continue;
        }
        let target = super::runs::target(run, ctx.sims, &ctx.plan.base_dir);
        let mut listed = Vec::new();
        if ep.spec.connection_test {
            let served = connect::test(&ep.name, &target, deadline(run), say).await?;
            if let Some(line) = connect::served_line(&ep.name, &served) {
                say(&line);
            }
            for same in runs.iter().filter(|r| r.settings.endpoint.name == ep.name) {
                connect::check_models(&ep.name, same, &served)?;
            }
            tested.insert(ep.name.clone());
            listed = served.listed;
        }
        let facts = crate::probe::describe::read(&target, &ep.spec, listed, ctx.redactor).await;
        read.push((ep.name.clone(), facts));
    }
    Ok((tested, read))
}

/// How long a run's endpoint is waited for: its `ready_timeout`, else the default.
pub(in crate::suite) fn deadline(run: &RunSpec) -> std::time::Duration {
    run.settings
        .endpoint
        .spec
        .ready_timeout
        .map_or(crate::control::timeouts::CONNECTION_TEST, |d| d.0)
}
