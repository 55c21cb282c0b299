//! The connection test before an endpoint's first run: `GET` of its model list (the one
//! URL rule, `paths.models` applied). A 4xx stops the suite with a clear message; a TLS
//! failure stops it at once with its cause; a refused connection is retried until a
//! deadline (the server may still be starting), and the wait is said at once: what is
//! awaited, why, and for how long. The models the server lists are kept: a run whose
//! model the server does not list stops the suite, naming the nearest listed one (case
//! aside) and every one. Never used during a run (some servers block the model list
//! while generating).

use std::time::{Duration, Instant};

use super::ProbeError;
use crate::control::{self, Route};
use crate::engine::Target;
use crate::planner::RunSpec;

/// Probes every replica of `target` (its one URL, or each of `urls`), within one
/// deadline; `say` is told at once when a server is waited for. Returns the models the
/// replicas list (none when they list none, or not as an OpenAI model list).
pub async fn test(
    endpoint: &str,
    target: &Target,
    deadline: Duration,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Served, ProbeError> {
    let start = Instant::now();
    let mut served = Served::default();
    for replica in target.each_replica() {
        let left = deadline.saturating_sub(start.elapsed());
        let one = test_one(endpoint, &replica, left, say).await?;
        served.url = one.url;
        if served.listed.is_empty() {
            served.listed = one.listed;
        }
        for m in one.models {
            if !served.models.contains(&m) {
                served.models.push(m);
            }
        }
    }
    Ok(served)
}

/// What a connection test found: the models listed, at which URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    pub url: String,
    /// The names judged against the runs' models (none when the server serves any).
    pub models: Vec<String>,
    /// The first replica's list as the server gave it, with its metadata (the suite's
    /// environment record).
    pub listed: Vec<crate::api::models::ListedModel>,
}

/// A duration as the waiting line says it: `30 s`, `2 min`.
fn span(d: Duration) -> String {
    // Tenths of a second: what is left of a deadline reads as the deadline.
    let s = (d.as_secs_f64() * 10.0).round() / 10.0;
    if s >= 120.0 && s % 60.0 == 0.0 {
        format!("{} min", s / 60.0)
    } else {
        format!("{s} s")
    }
}

/// What a 4xx answer to the model list means, with advice.
fn refused(status: reqwest::StatusCode, body: &str) -> String {
    let hint = match status.as_u16() {
        401 | 403 => " (check the API key: `api_key_env` names the variable that holds it)",
        404 => " (check base_url, or set `paths.models` if the server lists its models elsewhere; the server must speak the OpenAI API)",
        _ => "",
    };
    format!(
        "GET answered HTTP {status}{hint}: {}",
        crate::record::excerpt(body.as_bytes())
    )
}

/// What an answer to the model list says: its entries when it is a 2xx list, the names
/// to judge unless the server serves any.
fn served_of(url: &str, ok: bool, body: &[u8]) -> Served {
    let (listed, any) = if ok {
        crate::api::models::listed(body)
    } else {
        (Vec::new(), false)
    };
    let models = if any {
        Vec::new()
    } else {
        listed.iter().map(|m| m.id.clone()).collect()
    };
    Served {
        url: url.to_string(),
        models,
        listed,
    }
}

/// Probes `target`; `Ok` when the server answers 2xx (or a 5xx: the server is up).
async fn test_one(
    endpoint: &str,
    target: &Target,
    deadline: Duration,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Served, ProbeError> {
    let client = target
        .control(
            target
                .timeouts
                .read
                .min(control::timeouts::CONNECTION_TEST_REQUEST),
        )
        .map_err(|source| ProbeError::Control {
            endpoint: endpoint.to_string(),
            source,
        })?;
    let url = client.urls().of(Route::Models).clone();
    let fail = |message: String| ProbeError::Connection {
        endpoint: endpoint.to_string(),
        url: url.to_string(),
        message,
    };
    let start = Instant::now();
    let mut said = false;
    loop {
        match client.get(Route::Models).send().await {
            Ok(resp) if resp.status().is_client_error() => {
                let status = resp.status();
                let body = resp.text().await.unwrap_or_default();
                return Err(fail(refused(status, &body)));
            }
            Ok(resp) => {
                let ok = resp.status().is_success();
                let body = resp.bytes().await.unwrap_or_default();
                if said {
                    say(&format!(
                        "{url} answered after {:.1} s",
                        start.elapsed().as_secs_f64()
                    ));
                }
                return Ok(served_of(url.as_str(), ok, &body));
            }
            // A certificate problem does not go away by waiting: say so at once.
            Err(e) if control::tls_problem(&e).is_some() => {
                return Err(fail(format!(
                    "TLS handshake failed: {}",
                    control::explain(&e)
                )))
            }
            Err(e) if e.is_connect() && start.elapsed() < deadline => {
                if !said {
                    said = true;
                    say(&format!(
                        "waiting for {url} (endpoint `{endpoint}`): {}; retrying up to {}",
                        control::cause(&e),
                        span(deadline)
                    ));
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                return Err(fail(format!(
                "{}, for {:.1} s (is the server running? `ready_timeout` sets how long to wait)",
                control::cause(&e),
                start.elapsed().as_secs_f64()
            )))
            }
        }
    }
}

/// The line that names what a server lists (none when it lists no model).
pub(crate) fn served_line(endpoint: &str, served: &Served) -> Option<String> {
    (!served.models.is_empty()).then(|| {
        format!(
            "endpoint `{endpoint}`: {} lists {}",
            served.url,
            served.models.join(", ")
        )
    })
}

/// Every model the run sends whose name the server does not list: the first one is an
/// error naming the nearest listed name (case aside) and every listed one. A server that
/// lists no model is not judged.
pub(crate) fn check_models(
    endpoint: &str,
    run: &RunSpec,
    served: &Served,
) -> Result<(), ProbeError> {
    if served.models.is_empty() {
        return Ok(());
    }
    for model in run.models_sent() {
        if served.models.contains(&model) {
            continue;
        }
        let suggestion =
            crate::suggest::nearest_ignoring_case(&model, served.models.iter().map(String::as_str))
                .map(String::from);
        return Err(ProbeError::ModelNotServed {
            endpoint: endpoint.to_string(),
            url: served.url.clone(),
            model,
            suggestion,
            served: served.models.clone(),
        });
    }
    Ok(())
}
