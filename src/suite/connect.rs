//! The connection test before an endpoint's first run: `GET` of its model list (the one
//! URL rule, `paths.models` applied). A 4xx stops the suite with a clear message; a TLS
//! failure stops it at once with its cause; a refused connection is retried until a
//! deadline (the server may still be starting). Never used during a run (some servers
//! block the model list while generating).

use std::time::{Duration, Instant};

use super::RunnerError;
use crate::control::{self, Route};
use crate::engine::Target;

/// Probes every replica of `target` (its one URL, or each of `urls`), within one deadline.
pub async fn test(endpoint: &str, target: &Target, deadline: Duration) -> Result<(), RunnerError> {
    let start = Instant::now();
    for replica in target.each_replica() {
        test_one(endpoint, &replica, deadline.saturating_sub(start.elapsed())).await?;
    }
    Ok(())
}

/// Probes `target`; `Ok` when the server answers 2xx (or a 5xx: the server is up).
async fn test_one(endpoint: &str, target: &Target, deadline: Duration) -> Result<(), RunnerError> {
    let client = target
        .control(
            target
                .timeouts
                .read
                .min(control::timeouts::CONNECTION_TEST_REQUEST),
        )
        .map_err(|source| RunnerError::Control {
            endpoint: endpoint.to_string(),
            source,
        })?;
    let url = client.urls().of(Route::Models).clone();
    let fail = |message: String| RunnerError::Connection {
        endpoint: endpoint.to_string(),
        url: url.to_string(),
        message,
    };
    let start = Instant::now();
    loop {
        match client.get(Route::Models).send().await {
            Ok(resp) if resp.status().is_client_error() => {
                let status = resp.status();
                let body = resp.text().await.unwrap_or_default();
                let hint = match status.as_u16() {
                    401 | 403 => " (check the API key: `api_key_env` names the variable that holds it)",
                    404 => " (check base_url, or set `paths.models` if the server lists its models elsewhere; the server must speak the OpenAI API)",
                    _ => "",
                };
                return Err(fail(format!(
                    "GET answered HTTP {status}{hint}: {}",
                    crate::record::excerpt(body.as_bytes())
                )));
            }
            Ok(_) => return Ok(()),
            // A certificate problem does not go away by waiting: say so at once.
            Err(e) if control::tls_problem(&e).is_some() => {
                return Err(fail(format!(
                    "TLS handshake failed: {}",
                    control::explain(&e)
                )))
            }
            Err(e) if e.is_connect() && start.elapsed() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                return Err(fail(format!(
                    "{} (is the server running? tried for {:.1}s)",
                    control::explain(&e),
                    start.elapsed().as_secs_f64()
                )))
            }
        }
    }
}
