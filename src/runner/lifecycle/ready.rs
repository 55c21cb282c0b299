//! Readiness of a launched server: the URL its `ready` names (a path on the endpoint, a
//! whole URL, or `/v1/models` by default), polled with a growing pause until it answers
//! 200, the server exits, or the timeout passes. Knows endpoint specs, not runs.

use std::time::{Duration, Instant};

use super::process::{fill_port, log_tail};
use super::{LifecycleError, Servers};
use crate::plan::EndpointSpec;

/// The URL polled for readiness, its `{port}` filled.
pub(super) fn ready_url(spec: &EndpointSpec, base_url: &str, port: Option<u16>) -> String {
    match spec.ready.as_deref().map(|r| fill_port(r, port)) {
        Some(r) if r.starts_with('/') => format!("{}{r}", base_url.trim_end_matches('/')),
        Some(r) => r,
        None => format!("{}/v1/models", base_url.trim_end_matches('/')),
    }
}

impl Servers {
    pub(super) async fn wait_ready(
        &mut self,
        endpoint: &str,
        url: &str,
        timeout: Duration,
    ) -> Result<(), LifecycleError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_default();
        let start = Instant::now();
        let mut pause = Duration::from_millis(20);
        loop {
            self.alive(endpoint)?;
            if let Ok(resp) = client.get(url).send().await {
                if resp.status().as_u16() == 200 {
                    eprintln!(
                        "perfplan: endpoint `{endpoint}`: ready after {:.1}s",
                        start.elapsed().as_secs_f64()
                    );
                    return Ok(());
                }
            }
            if start.elapsed() >= timeout {
                let log = self.log_path(endpoint);
                return Err(LifecycleError::NotReady {
                    url: url.to_string(),
                    waited: timeout,
                    tail: log_tail(&log),
                    log,
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}
