//! Servers launched by the plan: `launch` run through `sh -c` in its own process group
//! (output to `servers/<endpoint>.log`), `ready` polled until it answers 200, `stop` (or
//! SIGTERM to the process group, then SIGKILL after a grace period), `reset_cache`, and the
//! `{port}` placeholder filled with a free port. Only processes started here are signalled.
//! Knows endpoint specs, not runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::plan::EndpointSpec;

/// How long `ready` is polled when the plan does not say.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// Time between SIGTERM and SIGKILL when stopping a launched server.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// The placeholder filled with a free TCP port in `base_url`, `launch`, `ready`, `stop`
/// and `reset_cache` of an endpoint with `launch`.
pub const PORT_PLACEHOLDER: &str = "{port}";
/// Lines of a server log quoted in errors.
const TAIL_LINES: usize = 15;

/// Why a launched server is not usable.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    #[error("cannot write the server log {}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the launched server exited ({status}); last lines of {}:\n{tail}", log.display())]
    Exited {
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("the launched server did not answer 200 on {url} within {waited:?}; last lines of {}:\n{tail}", log.display())]
    NotReady {
        url: String,
        waited: Duration,
        log: PathBuf,
        tail: String,
    },
    #[error("no free port for {PORT_PLACEHOLDER}")]
    Port(#[source] std::io::Error),
    #[error("the server failed to start earlier in this suite: {0}")]
    Earlier(String),
}

/// Process group ids of launched servers, shared with the Ctrl-C handler.
pub type Registry = Arc<Mutex<BTreeSet<u32>>>;

/// Sends `signal` (e.g. `TERM`, `KILL`) to a process group started by perfplan.
pub fn signal_group(pgid: u32, signal: &str) {
    let _ = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("kill -s {signal} -- -{pgid}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// SIGKILL to every process group still registered (the last resort of a second Ctrl-C).
pub fn kill_registered(registry: &Registry) {
    if let Ok(set) = registry.lock() {
        for pgid in set.iter() {
            signal_group(*pgid, "KILL");
        }
    }
}

/// The last lines of a log file.
pub fn log_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let start = text.len().saturating_sub(8 * 1024);
    let text = String::from_utf8_lossy(&text[start..]);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

/// `text` with `{port}` replaced.
pub fn fill_port(text: &str, port: Option<u16>) -> String {
    match port {
        Some(p) => text.replace(PORT_PLACEHOLDER, &p.to_string()),
        None => text.to_string(),
    }
}

/// A free TCP port on 127.0.0.1 (the listener is closed again; the server binds it next).
fn free_port() -> Result<u16, LifecycleError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(LifecycleError::Port)?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(LifecycleError::Port)
}

/// `PATH` with the directory of the running perfplan first, so `launch = "perfplan sim …"`
/// finds this very binary.
fn launch_path() -> Option<String> {
    let dir = std::env::current_exe().ok()?.parent()?.to_path_buf();
    let old = std::env::var("PATH").unwrap_or_default();
    Some(format!("{}:{old}", dir.display()))
}

/// A shell command with the plan's environment (perfplan's own) and output to `log`.
fn shell(command: &str, log: &std::fs::File) -> std::io::Result<tokio::process::Command> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::null());
    cmd.stdout(Stdio::from(log.try_clone()?));
    cmd.stderr(Stdio::from(log.try_clone()?));
    if let Some(path) = launch_path() {
        cmd.env("PATH", path);
    }
    Ok(cmd)
}

fn open_log(path: &Path) -> Result<std::fs::File, LifecycleError> {
    let fail = |source| LifecycleError::Log {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(fail)
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}

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
    pub fn log_path(&self, endpoint: &str) -> PathBuf {
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
    /// is ready; an error when it exited or never became ready (with its log tail).
    pub async fn ensure(
        &mut self,
        endpoint: &str,
        spec: &EndpointSpec,
        base_url: &str,
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
            .launch(endpoint, spec, &fill_port(launch, port), base_url, port)
            .await;
        if let Err(e) = &result {
            self.failed
                .insert(endpoint.to_string(), crate::runner::chain(e));
        }
        result
    }

    async fn launch(
        &mut self,
        endpoint: &str,
        spec: &EndpointSpec,
        command: &str,
        base_url: &str,
        port: Option<u16>,
    ) -> Result<(), LifecycleError> {
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
        let url = match spec.ready.as_deref().map(|r| fill_port(r, port)) {
            Some(r) if r.starts_with('/') => format!("{}{r}", base_url.trim_end_matches('/')),
            Some(r) => r,
            None => format!("{}/v1/models", base_url.trim_end_matches('/')),
        };
        let timeout = spec.ready_timeout.map_or(READY_TIMEOUT, |d| d.0);
        let ready = self.wait_ready(endpoint, &url, timeout).await;
        if ready.is_err() {
            self.stop(endpoint).await;
        }
        ready
    }

    async fn wait_ready(
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

    /// `Ok` while the endpoint's launched server runs (or it has none).
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
                    .insert(endpoint.to_string(), crate::runner::chain(&err));
                Err(err)
            }
            _ => Ok(()),
        }
    }

    /// Whether the endpoint has a launched server running now.
    pub fn is_running(&self, endpoint: &str) -> bool {
        self.running.contains_key(endpoint)
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
            eprintln!("perfplan: endpoint `{endpoint}`: server still running after {STOP_GRACE:?}; killing it");
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
    pub async fn stop_all(&mut self) {
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

/// Resets the endpoint's prefix cache (`reset_cache`, or vLLM's route); the run warning
/// when that failed.
pub async fn reset_warning(
    spec: &EndpointSpec,
    port: Option<u16>,
    target: &crate::engine::Target,
) -> Option<String> {
    let reset = spec.reset_cache.as_deref().map_or_else(
        || super::cache::DEFAULT_RESET.to_string(),
        |r| fill_port(r, port),
    );
    let done = reset_cache(&reset, &target.base_url, target.api_key.as_deref()).await;
    done.err()
        .map(|msg| format!("cache_reset_failed: {msg}; this run may not start from an empty cache"))
}

/// Empties the server's prefix cache: `"POST /path"` (or `"POST http://…"`) as an HTTP
/// call, anything else as a shell command. The error says what went wrong.
pub async fn reset_cache(reset: &str, base_url: &str, api_key: Option<&str>) -> Result<(), String> {
    let mut words = reset.split_whitespace();
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    let is_http = matches!(method, "POST" | "GET" | "PUT" | "DELETE")
        && words.next().is_none()
        && (target.starts_with('/') || target.starts_with("http"));
    if !is_http {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c").arg(reset).stdin(Stdio::null());
        if let Some(path) = launch_path() {
            cmd.env("PATH", path);
        }
        let out = cmd
            .output()
            .await
            .map_err(|e| format!("cannot run `{reset}`: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        return Err(format!(
            "`{reset}` failed ({}): {}",
            describe(out.status),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let url = if target.starts_with('/') {
        format!("{}{target}", base_url.trim_end_matches('/'))
    } else {
        target.to_string()
    };
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let client = reqwest::Client::new();
    let mut req = client
        .request(method, &url)
        .timeout(Duration::from_secs(30));
    if let Some(key) = api_key {
        req = req.bearer_auth(key);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| format!("{reset} on {url}: {e}"))?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(format!("{reset} on {url} answered HTTP {}", resp.status()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_placeholder_is_filled() {
        assert_eq!(
            fill_port("perfplan sim --port {port}", Some(8123)),
            "perfplan sim --port 8123"
        );
        assert_eq!(fill_port("http://h:{port}", None), "http://h:{port}");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.log");
        let text: String = (0..40).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let tail = log_tail(&p);
        assert!(tail.starts_with("line 25"));
        assert!(tail.ends_with("line 39"));
        assert_eq!(log_tail(&dir.path().join("missing")), "");
    }
}
