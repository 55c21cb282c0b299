//! The launched servers of a suite: each launched on first use in its own process group
//! (registered for Ctrl-C), its `{port}` chosen once, watched for exiting, and stopped
//! (its `stop` command or SIGTERM, SIGKILL after the grace period) when the suite moves
//! on; a server that failed once is not launched again. Knows endpoint specs, not runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::process::{describe, fill_port, free_port, log_tail, open_log, shell, signal_group};
use super::ready::ready_url;
use super::{LifecycleError, Registry, PORT_PLACEHOLDER};
use crate::control;
use crate::control::timeouts::{READY_LAUNCHED, READY_POLL, STOP_GRACE};
use crate::plan::EndpointSpec;

struct Launched {
    child: tokio::process::Child,
    pgid: u32,
    log: PathBuf,
    stop: Option<String>,
}

/// The servers of a suite: launched on first use, stopped when the suite moves on.
pub struct Servers {
    dir: PathBuf,
    ports: BTreeMap<String, u16>,
    running: BTreeMap<String, Launched>,
    failed: BTreeMap<String, String>,
    registry: Registry,
}

impl Servers {
    /// Launched servers write their logs under `<dir>/servers/`.
    pub fn new(dir: &Path) -> Servers {
        Servers {
            dir: dir.to_path_buf(),
            ports: BTreeMap::new(),
            running: BTreeMap::new(),
            failed: BTreeMap::new(),
            registry: Registry::default(),
        }
    }

    pub fn registry(&self) -> Registry {
        self.registry.clone()
    }

    /// The log file of an endpoint's launched server.
    pub(crate) fn log_path(&self, endpoint: &str) -> PathBuf {
        self.dir.join("servers").join(format!("{endpoint}.log"))
    }

    /// The port chosen for `{port}` of a launched endpoint (chosen once per suite).
    pub fn port(
        &mut self,
        endpoint: &str,
        spec: &EndpointSpec,
    ) -> Result<Option<u16>, LifecycleError> {
        let wants = spec.launch.is_some()
            && [
                Some(&spec.base_url),
                spec.launch.as_ref(),
                spec.ready.as_ref(),
            ]
            .into_iter()
            .flatten()
            .chain(&spec.urls)
            .any(|t| t.contains(PORT_PLACEHOLDER));
        if !wants {
            return Ok(None);
        }
        if let Some(p) = self.ports.get(endpoint) {
            return Ok(Some(*p));
        }
        let p = free_port()?;
        self.ports.insert(endpoint.to_string(), p);
        Ok(Some(p))
    }

    /// Makes sure the endpoint's server is up: launches it on first use and waits until it
    /// is ready (every replica of `servers`, one per URL, within `ready_timeout`); an error
    /// when it exited or never became ready (with its log tail).
    pub(crate) async fn ensure(
        &mut self,
        endpoint: &str,
        spec: &EndpointSpec,
        servers: &[control::ClientSpec<'_>],
    ) -> Result<(), LifecycleError> {
        let Some(launch) = &spec.launch else {
            return Ok(());
        };
        if let Some(msg) = self.failed.get(endpoint) {
            return Err(LifecycleError::Earlier(msg.clone()));
        }
        if self.running.contains_key(endpoint) {
            return self.alive(endpoint);
        }
        let port = self.port(endpoint, spec)?;
        let result = self
            .launch(endpoint, spec, &fill_port(launch, port), servers, port)
            .await;
        if let Err(e) = &result {
            self.failed
                .insert(endpoint.to_string(), crate::control::chain(e));
        }
        result
    }

    async fn launch(
        &mut self,
        endpoint: &str,
        spec: &EndpointSpec,
        command: &str,
        servers: &[control::ClientSpec<'_>],
        port: Option<u16>,
    ) -> Result<(), LifecycleError> {
        let clients = servers
            .iter()
            .map(|server| {
                control::Client::new(&control::ClientSpec {
                    timeout: READY_POLL,
                    ..*server
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(LifecycleError::Control)?;
        let log = self.log_path(endpoint);
        let file = open_log(&log)?;
        let spawn = |source| LifecycleError::Spawn {
            command: command.to_string(),
            source,
        };
        let mut cmd = shell(command, &file).map_err(spawn)?;
        cmd.process_group(0).kill_on_drop(false);
        let child = cmd.spawn().map_err(spawn)?;
        let pgid = child.id().unwrap_or(0);
        eprintln!(
            "perfplan: endpoint `{endpoint}`: launched `{command}` (pid {pgid}, log {})",
            log.display()
        );
        if let Ok(mut set) = self.registry.lock() {
            set.insert(pgid);
        }
        self.running.insert(
            endpoint.to_string(),
            Launched {
                child,
                pgid,
                log: log.clone(),
                stop: spec.stop.as_ref().map(|s| fill_port(s, port)),
            },
        );
        let timeout = spec.ready_timeout.map_or(READY_LAUNCHED, |d| d.0);
        let began = std::time::Instant::now();
        let mut ready = Ok(());
        for client in &clients {
            let left = timeout.saturating_sub(began.elapsed());
            ready = match ready_url(spec, client, port) {
                Ok(url) => self.wait_ready(endpoint, client, &url, left).await,
                Err(e) => Err(e),
            };
            if ready.is_err() {
                break;
            }
        }
        if ready.is_err() {
            self.stop(endpoint).await;
        }
        ready
    }

    /// `Ok` while the endpoint's launched server runs (or it has none).
    /// Whether perfplan launched `endpoint`'s server and it is running.
    pub fn launched(&self, endpoint: &str) -> bool {
        self.running.contains_key(endpoint)
    }

    pub fn alive(&mut self, endpoint: &str) -> Result<(), LifecycleError> {
        let Some(l) = self.running.get_mut(endpoint) else {
            return match self.failed.get(endpoint) {
                Some(msg) => Err(LifecycleError::Earlier(msg.clone())),
                None => Ok(()),
            };
        };
        match l.child.try_wait() {
            Ok(Some(status)) => {
                let err = LifecycleError::Exited {
                    status: describe(status),
                    tail: log_tail(&l.log),
                    log: l.log.clone(),
                };
                let pgid = l.pgid;
                self.running.remove(endpoint);
                if let Ok(mut set) = self.registry.lock() {
                    set.remove(&pgid);
                }
                self.failed
                    .insert(endpoint.to_string(), crate::control::chain(&err));
                Err(err)
            }
            _ => Ok(()),
        }
    }

    /// The process group id of an endpoint's launched server.
    pub fn pgid(&self, endpoint: &str) -> Option<u32> {
        self.running.get(endpoint).map(|l| l.pgid)
    }

    /// Stops the endpoint's launched server: its `stop` command, else SIGTERM to its
    /// process group; SIGKILL after the grace period.
    pub async fn stop(&mut self, endpoint: &str) {
        let Some(mut l) = self.running.remove(endpoint) else {
            return;
        };
        if let Some(stop) = &l.stop {
            if let Ok(file) = open_log(&l.log) {
                if let Ok(mut cmd) = shell(stop, &file) {
                    let _ = cmd.status().await;
                }
            }
        } else {
            signal_group(l.pgid, "TERM");
        }
        let exited = tokio::time::timeout(STOP_GRACE, l.child.wait()).await;
        if exited.is_err() {
            eprintln!(
                "perfplan: endpoint `{endpoint}`: server still running after {}; killing it",
                crate::units::format_duration(STOP_GRACE)
            );
            signal_group(l.pgid, "KILL");
            let _ = l.child.wait().await;
        } else {
            // Stragglers of the group (children that ignored SIGTERM).
            signal_group(l.pgid, "KILL");
        }
        if let Ok(mut set) = self.registry.lock() {
            set.remove(&l.pgid);
        }
    }

    /// Stops every launched server.
    pub(crate) async fn stop_all(&mut self) {
        let names: Vec<String> = self.running.keys().cloned().collect();
        for name in names {
            self.stop(&name).await;
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for l in self.running.values() {
            signal_group(l.pgid, "KILL");
        }
    }
}
