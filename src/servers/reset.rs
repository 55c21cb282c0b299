//! Emptying a server's prefix cache before a run: `reset_cache` as an HTTP call
//! (`"POST /path"` or `"POST http://…"`) or as a shell command, and the run warning when
//! that failed. Knows endpoint specs and where the server is, not runs.

use std::process::Stdio;

use super::process::{describe, fill_port, launch_path};
use crate::control::{self, chain, explain};
use crate::plan::EndpointSpec;

/// The reset used when `reset_cache_before` is set without `reset_cache` (vLLM's route).
pub(crate) const DEFAULT_RESET: &str = "POST /reset_prefix_cache";

/// Resets the endpoint's prefix cache (`reset_cache`, or vLLM's route) on every replica
/// (`servers`: one per URL; a shell command runs once); the run warning when that failed.
pub async fn reset_warning(
    spec: &EndpointSpec,
    port: Option<u16>,
    servers: &[control::ClientSpec<'_>],
) -> Option<String> {
    let reset = spec
        .reset_cache
        .as_deref()
        .map_or_else(|| DEFAULT_RESET.to_string(), |r| fill_port(r, port));
    let once = !is_http(&reset);
    let mut failed = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let done = match control::Client::new(&control::ClientSpec {
            timeout: control::timeouts::RESET,
            ..*server
        }) {
            Ok(client) => reset_cache(&reset, &client).await,
            Err(e) => Err(chain(&e)),
        };
        if let Err(msg) = done {
            failed.push(match servers.len() {
                1 => msg,
                _ => format!("replica {i} ({}): {msg}", server.base_url),
            });
        }
        if once {
            break;
        }
    }
    (!failed.is_empty()).then(|| {
        format!(
            "cache_reset_failed: {}; this run may not start from an empty cache",
            failed.join("; ")
        )
    })
}

/// Whether `reset` is an HTTP call (`"POST /path"`, `"POST http://…"`), not a shell command.
fn is_http(reset: &str) -> bool {
    let mut words = reset.split_whitespace();
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    matches!(method, "POST" | "GET" | "PUT" | "DELETE")
        && words.next().is_none()
        && (target.starts_with('/') || target.starts_with("http"))
}

/// Empties the server's prefix cache: `"POST /path"` (a server path, joined to `base_url`
/// by the one URL rule) or `"POST http://…"` as an HTTP call, anything else as a shell
/// command. The error says what went wrong.
pub async fn reset_cache(reset: &str, client: &control::Client) -> Result<(), String> {
    if !is_http(reset) {
        return reset_by_shell(reset).await;
    }
    let mut words = reset.split_whitespace();
    let method = words.next().unwrap_or_default();
    let target = words.next().unwrap_or_default();
    let url = client
        .urls()
        .server(target)
        .map_err(|e| format!("{reset}: {}", chain(&e)))?;
    reset_by_http(reset, method, url, client).await
}

/// `reset` as a shell command with perfplan's `PATH`; its stderr in the error.
async fn reset_by_shell(reset: &str) -> Result<(), String> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(reset).stdin(Stdio::null());
    if let Some(path) = launch_path() {
        cmd.env("PATH", path);
    }
    let out = cmd
        .output()
        .await
        .map_err(|e| format!("cannot run `{reset}`: {}", chain(&e)))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "`{reset}` failed ({}): {}",
        describe(out.status),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// `reset` as one HTTP call of `method` on `url`; any 2xx answer is success.
async fn reset_by_http(
    reset: &str,
    method: &str,
    url: url::Url,
    client: &control::Client,
) -> Result<(), String> {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let shown = url.to_string();
    let resp = client
        .request(method, url)
        .send()
        .await
        .map_err(|e| format!("{reset} on {shown}: {}", explain(&e)))?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(format!(
            "{reset} on {shown} answered HTTP {}",
            resp.status()
        ))
    }
}
