//! The checks of a simulator's settings (`SimConfig::validate`): values that would make
//! it misbehave, named by their setting. Run by `perfplan sim` and, for a plan's
//! `[endpoints.NAME.sim]` tables, at validation. Pure.

use super::sim_settings::SimConfig;

/// A simulator setting that would make it misbehave.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid simulator setting `{setting}`: {reason}")]
pub struct SettingError {
    pub setting: &'static str,
    pub reason: String,
}

impl SimConfig {
    /// Checks settings that would make the simulator misbehave (a plan's `[endpoints.NAME.sim]`
    /// is checked with it at validation).
    pub fn validate(&self) -> Result<(), SettingError> {
        let faults = [
            ("fault_http_429", self.fault_http_429),
            ("fault_http_500", self.fault_http_500),
            ("fault_http_503", self.fault_http_503),
            ("fault_drop", self.fault_drop),
            ("fault_stall", self.fault_stall),
            ("fault_malformed", self.fault_malformed),
            ("fault_slow_headers", self.fault_slow_headers),
        ];
        for (setting, f) in faults {
            if !(0.0..=1.0).contains(&f) {
                return Err(SettingError {
                    setting,
                    reason: format!("{f} is not a fraction between 0 and 1"),
                });
            }
        }
        let sum: f64 = faults.iter().map(|(_, f)| f).sum();
        if sum > 1.0 + 1e-9 {
            return Err(SettingError {
                setting: "fault_*",
                reason: format!("fault fractions add up to {sum}, more than 1"),
            });
        }
        for (setting, f) in [
            ("tool_call_rate", self.tool_call_rate),
            ("fault_tool_arguments", self.fault_tool_arguments),
        ] {
            if !(0.0..=1.0).contains(&f) {
                return Err(SettingError {
                    setting,
                    reason: format!("{f} is not a fraction between 0 and 1"),
                });
            }
        }
        if !(1..=16).contains(&self.tool_calls_per_answer) {
            return Err(SettingError {
                setting: "tool_calls_per_answer",
                reason: format!("{} is not between 1 and 16", self.tool_calls_per_answer),
            });
        }
        if !(0.0..=0.9).contains(&self.jitter) {
            return Err(SettingError {
                setting: "jitter",
                reason: format!("{} is not a fraction from 0 to 0.9", self.jitter),
            });
        }
        if !self.prefill_tokens_per_s.is_finite() || self.prefill_tokens_per_s < 0.0 {
            return Err(SettingError {
                setting: "prefill_tokens_per_s",
                reason: "must be a non-negative number".into(),
            });
        }
        for (setting, v) in [
            ("tokens_per_chunk", self.tokens_per_chunk),
            ("max_num_seqs", self.max_num_seqs),
            ("block_size", self.block_size),
        ] {
            if v == 0 {
                return Err(SettingError {
                    setting,
                    reason: "must be at least 1".into(),
                });
            }
        }
        if !(1..=64).contains(&self.replicas) {
            return Err(SettingError {
                setting: "replicas",
                reason: format!("{} is not between 1 and 64", self.replicas),
            });
        }
        if let Some(mount) = &self.mount {
            check_mount(mount)?;
        }
        self.check_workers()
    }

    /// `workers` in range; `route` and `session_header` only with workers to route over,
    /// and the header a valid name.
    fn check_workers(&self) -> Result<(), SettingError> {
        if !(1..=64).contains(&self.workers) {
            return Err(SettingError {
                setting: "workers",
                reason: format!("{} is not between 1 and 64", self.workers),
            });
        }
        let alone = |setting| SettingError {
            setting,
            reason: "has no effect with one worker: set `workers` to 2 or more".into(),
        };
        if self.workers == 1 && self.route.is_some() {
            return Err(alone("route"));
        }
        if let Some(h) = &self.session_header {
            if self.workers == 1 {
                return Err(alone("session_header"));
            }
            if !super::replicas::is_header_name(h) {
                return Err(SettingError {
                    setting: "session_header",
                    reason: format!("`{h}` is not a valid HTTP header name"),
                });
            }
            if self.route.is_some_and(|r| !r.reads_session()) {
                return Err(SettingError {
                    setting: "session_header",
                    reason: "is read only by `route = \"session\"` and `\"sticky\"`".into(),
                });
            }
        }
        Ok(())
    }
}

/// A mount is `/` and path segments of unreserved characters, without a trailing `/`.
fn check_mount(mount: &str) -> Result<(), SettingError> {
    let bad = |reason: &str| SettingError {
        setting: "mount",
        reason: format!("`{mount}` {reason}"),
    };
    if !mount.starts_with('/') || mount.len() < 2 {
        return Err(bad(
            "must start with `/` and name a path, e.g. /gateway/openai",
        ));
    }
    if mount.ends_with('/') || mount.contains("//") {
        return Err(bad("must not end with `/` or hold an empty segment"));
    }
    let ok = |c: char| c.is_ascii_alphanumeric() || "-._~/".contains(c);
    if !mount.chars().all(ok) {
        return Err(bad(
            "may hold only letters, digits, `-`, `.`, `_`, `~` and `/`",
        ));
    }
    Ok(())
}
