//! What an endpoint says about itself, read once at its first use for the suite's
//! environment: `GET` of each self-description route the engines have (vLLM
//! `/version`, llama.cpp `/props`, TGI `/info`, SGLang `/get_server_info`) at the
//! server's root, at once, each bounded by a short timeout; the model list's entries
//! the connection test already read; a launched server's command. Never fails: a route
//! that does not answer is left out. Known secret values are hidden in all of it.

use futures_util::future::join_all;

use crate::control::{self, timeouts};
use crate::engine::Target;
use crate::environment::{server, EndpointFacts};
use crate::secrets::Redactor;

/// Largest self-description body read (a `/props` holds a chat template).
const MAX_BODY: usize = 1 << 20;

/// One route's 2xx body (none for any other answer, an error or a timeout).
async fn answer(client: &control::Client, route: &str) -> Option<Vec<u8>> {
    let url = client.urls().server(route).ok()?;
    let resp = client
        .request(reqwest::Method::GET, url)
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body = resp.bytes().await.ok()?;
    (body.len() <= MAX_BODY).then(|| body.to_vec())
}

/// What the endpoint at `target` (its first replica) says of itself, with the models its
/// connection test listed and its launch command; `redactor` hides known secrets.
pub async fn read(
    target: &Target,
    listed: Vec<crate::api::models::ListedModel>,
    launch: Option<&str>,
    redactor: &Redactor,
) -> EndpointFacts {
    let first = target.each_replica().into_iter().next();
    let timeout = target.timeouts.read.min(timeouts::SELF_DESCRIPTION);
    let client = first.as_ref().and_then(|t| t.control(timeout).ok());
    let server = match &client {
        Some(client) => {
            let bodies = join_all(server::ROUTES.iter().map(|(r, _)| answer(client, r))).await;
            let answers: Vec<(&str, &[u8])> = server::ROUTES
                .iter()
                .zip(&bodies)
                .filter_map(|((route, _), body)| Some((*route, body.as_deref()?)))
                .collect();
            server::describe(&answers)
        }
        None => None,
    };
    let facts = EndpointFacts {
        labels: Default::default(),
        server,
        models: listed,
        launch: launch.map(str::to_string),
    };
    hide(facts, redactor)
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
