//! `import evalscope --from-script`: real scripts compute their arguments (`$((…))`, arrays
//! chosen by `if`, `${X:?}`, `$(date)`), so the script is not parsed but executed, as
//! `bash SCRIPT` would run it, with the caller's environment and folder, and `evalscope`
//! on `PATH` replaced by a recorder that appends its arguments to a file and exits 0.
//! The script's output goes to standard error; it is stopped after a time limit.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::ImportError;

/// The stand-in `evalscope`: each call appends `argc\0arg1\0…argN\0` to the record file.
fn recorder(record: &Path) -> String {
    let quoted = record.display().to_string().replace('\'', "'\\''");
    format!(
        "#!/bin/sh\n# perfplan import: records the arguments of evalscope; runs nothing.\n\
         {{ printf '%s\\000' \"$#\"; for a in \"$@\"; do printf '%s\\000' \"$a\"; done; }} >> '{quoted}'\n\
         echo \"perfplan: recorded: evalscope $1 … (not run)\" >&2\nexit 0\n"
    )
}

/// Every recorded command line (all arguments after `evalscope`).
fn read_record(bytes: &[u8]) -> Vec<Vec<String>> {
    let mut fields = bytes
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut out = Vec::new();
    while let Some(count) = fields.next() {
        let Ok(n) = count.parse::<usize>() else { break };
        out.push(fields.by_ref().take(n).collect());
    }
    out
}

/// Runs `script` with bash and returns the argument lists `evalscope` was called with.
pub fn record(script: &Path, timeout: Duration) -> Result<Vec<Vec<String>>, ImportError> {
    let shown = script.display().to_string();
    let io = |source| ImportError::Script {
        script: shown.clone(),
        source,
    };
    if !script.is_file() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        )));
    }
    let dir = tempfile::Builder::new()
        .prefix("perfplan-import-")
        .tempdir()
        .map_err(io)?;
    let record = dir.path().join("calls");
    let stand_in = dir.path().join("evalscope");
    let mut f = std::fs::File::create(&stand_in).map_err(io)?;
    f.write_all(recorder(&record).as_bytes()).map_err(io)?;
    drop(f);
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    let path = match std::env::var_os("PATH") {
        Some(p) => {
            let mut all = vec![dir.path().to_path_buf()];
            all.extend(std::env::split_paths(&p));
            std::env::join_paths(all).map_err(|e| io(std::io::Error::other(e)))?
        }
        None => dir.path().as_os_str().to_owned(),
    };
    let stdout = std::io::stderr()
        .lock()
        .try_clone_fd()
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new("bash")
            .arg(script)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .map_err(io)?
    };
    let status = wait(&mut child, timeout).map_err(io)?;
    let calls = std::fs::read(&record)
        .map(|b| read_record(&b))
        .unwrap_or_default();
    match status {
        Some(s) if s.success() => Ok(calls),
        other => Err(ImportError::ScriptFailed {
            script: shown,
            how: match other.and_then(|s| s.code()) {
                Some(code) => format!("exited with status {code}"),
                None if other.is_none() => format!(
                    "was stopped after {}",
                    crate::units::format_duration(timeout)
                ),
                None => "was killed by a signal".to_string(),
            },
            recorded: calls.len(),
        }),
    }
}

/// The script's exit status, or `None` when it ran past `timeout` (its process group is
/// then killed).
fn wait(
    child: &mut std::process::Child,
    timeout: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() > timeout {
            crate::servers::signal_group(child.id(), "KILL");
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A duplicate of standard error as a `Stdio`, so a script's output never mixes with the
/// plan written to standard output.
trait CloneFd {
    fn try_clone_fd(&self) -> std::io::Result<std::os::fd::OwnedFd>;
}

impl CloneFd for std::io::StderrLock<'_> {
    fn try_clone_fd(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        self.as_fd().try_clone_to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_keeps_arguments_with_spaces_and_newlines() {
        let rec = b"3\0perf\0--prompt\0a b\nc\x002\0perf\0--x\0";
        assert_eq!(
            read_record(rec),
            vec![
                vec!["perf".to_string(), "--prompt".into(), "a b\nc".into()],
                vec!["perf".to_string(), "--x".into()],
            ]
        );
    }
}
