//! `sim://NAME` endpoints: one simulator per name, started on 127.0.0.1 with an ephemeral
//! port on its own runtime thread (so its work never shares the client's thread), for
//! the runs that use it.

use std::collections::BTreeMap;

use crate::planner::RunSpec;
use crate::sim::{SimConfig, SimServer};

/// Why the simulators could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SimsError {
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot start the simulator for endpoint `{endpoint}`")]
    Sim {
        endpoint: String,
        #[source]
        source: crate::sim::SimError,
    },
}

/// The simulators of a suite, by `sim://` name (with `sim.replicas`, one per replica).
pub(crate) struct Sims {
    runtime: Option<tokio::runtime::Runtime>,
    servers: BTreeMap<String, Vec<SimServer>>,
}

impl Sims {
    /// Starts one simulator per distinct `sim://NAME` used by `runs`.
    /// Relative `tokenizer` paths in `[endpoints.NAME.sim]` start at the plan's folder.
    pub fn start(runs: &[RunSpec], base_dir: &std::path::Path) -> Result<Sims, SimsError> {
        let mut wanted: BTreeMap<String, (String, SimConfig)> = BTreeMap::new();
        for run in runs {
            let ep = &run.settings.endpoint;
            if let Some(name) = ep.spec.base_url.strip_prefix("sim://") {
                let mut config = ep.spec.sim.clone().unwrap_or_default();
                if let Some(t) = &config.tokenizer {
                    config.tokenizer = Some(base_dir.join(t).display().to_string());
                }
                wanted
                    .entry(name.to_string())
                    .or_insert((ep.name.clone(), config));
            }
        }
        if wanted.is_empty() {
            return Ok(Sims {
                runtime: None,
                servers: BTreeMap::new(),
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("perfplan-sim")
            .enable_all()
            .build()
            .map_err(SimsError::Runtime)?;
        let mut servers = BTreeMap::new();
        for (name, (endpoint, config)) in wanted {
            let mut replicas = Vec::new();
            for _ in 0..config.replicas.max(1) {
                let server =
                    runtime
                        .block_on(SimServer::start(config.clone()))
                        .map_err(|source| SimsError::Sim {
                            endpoint: endpoint.clone(),
                            source,
                        })?;
                replicas.push(server);
            }
            servers.insert(name, replicas);
        }
        Ok(Sims {
            runtime: Some(runtime),
            servers,
        })
    }

    /// The real URL of a base URL: `sim://NAME` → `http://127.0.0.1:PORT` (the first
    /// replica's).
    pub fn resolve(&self, base_url: &str) -> String {
        match base_url
            .strip_prefix("sim://")
            .and_then(|name| self.servers.get(name))
            .and_then(|r| r.first())
        {
            Some(server) => server.base_url(),
            None => base_url.to_string(),
        }
    }

    /// Every replica's URL of a `sim://NAME` with `sim.replicas` of 2 or more; empty
    /// otherwise (one URL: `resolve`).
    pub fn replicas(&self, base_url: &str) -> Vec<String> {
        match base_url
            .strip_prefix("sim://")
            .and_then(|name| self.servers.get(name))
        {
            Some(r) if r.len() > 1 => r.iter().map(SimServer::base_url).collect(),
            _ => Vec::new(),
        }
    }

    /// Stops every simulator.
    pub fn shutdown(mut self) {
        if let Some(rt) = self.runtime.take() {
            let servers = std::mem::take(&mut self.servers);
            rt.block_on(async {
                for s in servers.into_values().flatten() {
                    s.shutdown().await;
                }
            });
            rt.shutdown_background();
        }
    }
}
