//! The connection test before an endpoint's first run: `GET /v1/models`. A 4xx stops the
//! suite with a clear message; a refused connection is retried until a deadline (the
//! server may still be starting). Never used during a run (some servers block
//! `/v1/models` while generating).

use std::time::{Duration, Instant};

use super::RunnerError;
use crate::engine::Target;

/// How long a refused connection is retried.
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

/// Probes `target`; `Ok` when the server answers 2xx (or a 5xx: the server is up).
pub async fn test(endpoint: &str, target: &Target, deadline: Duration) -> Result<(), RunnerError> {
    let url = format!(
        "{}/v1/models",
        target
            .base_url
            .trim_end_matches('/')
            .trim_end_matches("/v1")
    );
    let fail = |message: String| RunnerError::Connection {
        endpoint: endpoint.to_string(),
        url: url.clone(),
        message,
    };
    let client = reqwest::Client::builder()
        .connect_timeout(target.timeouts.connect)
        .timeout(target.timeouts.read.min(Duration::from_secs(60)))
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let start = Instant::now();
    loop {
        let mut req = client.get(&url);
        if let Some(key) = &target.api_key {
            req = req.bearer_auth(key);
        }
        for (k, v) in &target.headers {
            req = req.header(k, v);
        }
        match req.send().await {
            Ok(resp) if resp.status().is_client_error() => {
                let status = resp.status();
                let body = resp.text().await.unwrap_or_default();
                let hint = match status.as_u16() {
                    401 | 403 => " (check the API key: `api_key_env` names the variable that holds it)",
                    404 => " (check base_url: it should not end in /v1, and the server must speak the OpenAI API)",
                    _ => "",
                };
                return Err(fail(format!(
                    "GET /v1/models answered HTTP {status}{hint}: {}",
                    crate::engine::excerpt(body.as_bytes())
                )));
            }
            Ok(_) => return Ok(()),
            Err(e) if e.is_connect() && start.elapsed() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                return Err(fail(format!(
                    "{e} (is the server running? tried for {:?})",
                    start.elapsed().as_secs()
                )))
            }
        }
    }
}
