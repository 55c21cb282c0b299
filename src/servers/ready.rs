//! Readiness of a launched server: the URL its `ready` names (a server path joined by the
//! one URL rule, or a whole URL), else the endpoint's model list, polled with a growing
//! pause until it answers 200, the server exits, the TLS handshake fails, or the timeout
//! passes. Knows endpoint specs, not runs.

use std::time::{Duration, Instant};

use url::Url;

use super::process::{fill_port, log_tail};
use super::{LifecycleError, Servers};
use crate::control::{self, Route};
use crate::plan::EndpointSpec;

/// The URL polled for readiness, its `{port}` filled.
pub(super) fn ready_url(
    spec: &EndpointSpec,
    client: &control::Client,
    port: Option<u16>,
) -> Result<Url, LifecycleError> {
    match spec.ready.as_deref().map(|r| fill_port(r, port)) {
        Some(r) => client
            .urls()
            .server(&r)
            .map_err(|e| LifecycleError::Control(e.into())),
        None => Ok(client.urls().of(Route::Models).clone()),
    }
}

impl Servers {
    pub(super) async fn wait_ready(
        &mut self,
        endpoint: &str,
        client: &control::Client,
        url: &Url,
        timeout: Duration,
    ) -> Result<(), LifecycleError> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(20);
        eprintln!(
            "perfplan: endpoint `{endpoint}`: waiting for {url} to answer 200 (up to {}; its server's output is in {})",
            crate::units::HumanDuration(timeout),
            self.log_path(endpoint).display()
        );
        loop {
            self.alive(endpoint)?;
            match client
                .request(reqwest::Method::GET, url.clone())
                .send()
                .await
            {
                Ok(resp) if resp.status().as_u16() == 200 => {
                    eprintln!(
                        "perfplan: endpoint `{endpoint}`: ready after {:.1}s",
                        start.elapsed().as_secs_f64()
                    );
                    return Ok(());
                }
                Err(e) if control::tls_problem(&e).is_some() => {
                    return Err(LifecycleError::Tls {
                        url: url.to_string(),
                        problem: control::explain(&e),
                    })
                }
                _ => {}
            }
            if start.elapsed() >= timeout {
                let log = self.log_path(endpoint);
                return Err(LifecycleError::NotReady {
                    url: url.to_string(),
                    waited: crate::units::HumanDuration(timeout),
                    tail: log_tail(&log),
                    log,
                });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }
}
