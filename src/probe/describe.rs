//! What an endpoint says about itself, read once at its first use for the suite's
//! environment: `GET` of each self-description route the engines have (vLLM
//! `/version`, llama.cpp `/props`, TGI `/info`, SGLang `/get_server_info`) at the
//! server's root, at once, each bounded by a short timeout; the model list's entries
//! the connection test already read; the accelerators the endpoint's `telemetry.urls`
//! (a DCGM exporter) name, each page read once; a launched server's command. Never
//! fails: what does not answer is left out. Known secret values are hidden in all of it.

use futures_util::future::join_all;

use crate::control::{self, timeouts};
use crate::engine::Target;
use crate::environment::{server, Accelerator, EndpointFacts};
use crate::plan::EndpointSpec;
use crate::secrets::Redactor;

/// Largest self-description body read (a `/props` holds a chat template).
const MAX_BODY: usize = 1 << 20;

/// One route's 2xx body (none for any other answer, an error, a timeout or a body over
/// [`MAX_BODY`]: a hostile server's endless answer is cut there).
async fn answer(
    client: &control::Client,
    route: &str,
    timeout: std::time::Duration,
) -> Option<String> {
    let url = client.urls().server(route).ok()?;
    crate::telemetry::fetch_at_most(client, url, timeout, MAX_BODY)
        .await
        .ok()
}

/// What the endpoint at `target` (its first replica) says of itself, with the models its
/// connection test listed, the accelerators its exporters name and its launch command;
/// `redactor` hides known secrets.
pub async fn read(
    target: &Target,
    spec: &EndpointSpec,
    listed: Vec<crate::api::models::ListedModel>,
    redactor: &Redactor,
) -> EndpointFacts {
    let first = target.each_replica().into_iter().next();
    let first = first.as_ref().unwrap_or(target);
    let timeout = target.timeouts.read.min(timeouts::SELF_DESCRIPTION);
    let server = match first.control(timeout) {
        Ok(client) => {
            let asked = server::ROUTES
                .iter()
                .map(|(r, _)| answer(&client, r, timeout));
            let bodies = join_all(asked).await;
            let answers: Vec<(&str, &[u8])> = server::ROUTES
                .iter()
                .zip(&bodies)
                .filter_map(|((route, _), body)| Some((*route, body.as_deref()?.as_bytes())))
                .collect();
            server::describe(&answers)
        }
        Err(_) => None,
    };
    let facts = EndpointFacts {
        labels: Default::default(),
        server,
        models: listed,
        accelerators: accelerators(first, spec, timeout).await,
        launch: spec.launch.clone(),
    };
    hide(facts, redactor)
}

/// The GPUs the endpoint's own `telemetry.urls` name (its metrics page is not read here:
/// its scrapes belong to the runs).
async fn accelerators(
    target: &Target,
    spec: &EndpointSpec,
    timeout: std::time::Duration,
) -> Vec<Accelerator> {
    let urls = spec
        .telemetry
        .as_ref()
        .map_or(&[][..], |t| t.urls.as_slice());
    if urls.is_empty() {
        return Vec::new();
    }
    let Ok(Some(plan)) = crate::telemetry::plan(
        target.control_spec(),
        spec.telemetry.as_ref(),
        spec.metrics.as_ref(),
    ) else {
        return Vec::new();
    };
    let mut found: Vec<Accelerator> = Vec::new();
    // The first target is the endpoint's own metrics page.
    for t in plan.targets.iter().skip(1) {
        let Ok(page) = crate::telemetry::fetch(&t.client, t.url.clone(), timeout).await else {
            continue;
        };
        for (model, count) in crate::telemetry::accelerators::accelerators(&page) {
            match found.iter_mut().find(|a| a.model == model) {
                Some(a) => a.count += count,
                None => found.push(Accelerator { model, count }),
            }
        }
    }
    found
}

/// `facts` with every known secret value replaced, wherever it appears.
fn hide(facts: EndpointFacts, redactor: &Redactor) -> EndpointFacts {
    let Ok(text) = serde_json::to_string(&facts) else {
        return facts;
    };
    match redactor.redact(&text) {
        std::borrow::Cow::Borrowed(_) => facts,
        std::borrow::Cow::Owned(hidden) => serde_json::from_str(&hidden).unwrap_or_default(),
    }
}
