//! Emptying a server's prefix cache before a run: `reset_cache` as an HTTP call
//! (`"POST /path"` or `"POST http://…"`) or as a shell command, and the run warning when
//! that failed. Knows endpoint specs and the engine's target, not runs.

use std::process::Stdio;
use std::time::Duration;

use super::process::{describe, fill_port, launch_path};
use crate::plan::EndpointSpec;

/// Resets the endpoint's prefix cache (`reset_cache`, or vLLM's route); the run warning
/// when that failed.
pub async fn reset_warning(
    spec: &EndpointSpec,
    port: Option<u16>,
    target: &crate::engine::Target,
) -> Option<String> {
    let reset = spec.reset_cache.as_deref().map_or_else(
        || crate::runner::cache::DEFAULT_RESET.to_string(),
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
        return reset_by_shell(reset).await;
    }
    let url = if target.starts_with('/') {
        format!("{}{target}", base_url.trim_end_matches('/'))
    } else {
        target.to_string()
    };
    reset_by_http(reset, method, &url, api_key).await
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
        .map_err(|e| format!("cannot run `{reset}`: {e}"))?;
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
    url: &str,
    api_key: Option<&str>,
) -> Result<(), String> {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let client = reqwest::Client::new();
    let mut req = client.request(method, url).timeout(Duration::from_secs(30));
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
