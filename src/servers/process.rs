//! Processes of launched servers, without state: a shell command with perfplan's
//! environment and its output to a log, signals to a process group started by perfplan,
//! how a process ended, a log's last lines, and the `{port}` placeholder with a free port.
//! Knows neither endpoint specs nor runs.

use std::path::Path;
use std::process::{ExitStatus, Stdio};

use super::{LifecycleError, Registry, PORT_PLACEHOLDER, TAIL_LINES};

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
pub(super) fn free_port() -> Result<u16, LifecycleError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(LifecycleError::Port)?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(LifecycleError::Port)
}

/// `PATH` with the directory of the running perfplan first, so `launch = "perfplan sim …"`
/// finds this very binary.
pub(super) fn launch_path() -> Option<String> {
    let dir = std::env::current_exe().ok()?.parent()?.to_path_buf();
    let old = std::env::var("PATH").unwrap_or_default();
    Some(format!("{}:{old}", dir.display()))
}

/// A shell command with the plan's environment (perfplan's own) and output to `log`.
pub(super) fn shell(
    command: &str,
    log: &std::fs::File,
) -> std::io::Result<tokio::process::Command> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command).stdin(Stdio::null());
    cmd.stdout(Stdio::from(log.try_clone()?));
    cmd.stderr(Stdio::from(log.try_clone()?));
    if let Some(path) = launch_path() {
        cmd.env("PATH", path);
    }
    Ok(cmd)
}

pub(super) fn open_log(path: &Path) -> Result<std::fs::File, LifecycleError> {
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

pub(super) fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
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
