//! Settings that differ between two matched runs beyond their axes: `compare` and the
//! baseline gates match runs by axis values, so two runs with equal axes may still have
//! been run with another output length, dataset, seed or template. Every resolved
//! setting of the two runs (their stored settings, flattened to dotted paths such as
//! `request.output_tokens`) is compared, except those that belong to an axis value: the
//! setting an axis sets (`dataset.input_tokens` for an `input_tokens` axis), the name of
//! the endpoint, model or dataset an axis picks, and everything under an axis left out of
//! the matching (`--ignore`). Endpoint settings (`base_url`, `launch`, server flags, the
//! simulator's) differ between releases by design: they are listed, never judged.

use serde_json::Value;

use crate::record::Clock;
use crate::store::StoredRun;

/// One setting that differs between a matched pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedSetting {
    /// The dotted path in the run's settings (`request.output_tokens`).
    pub setting: String,
    /// As the baseline run had it (`unset` when it did not).
    pub base: String,
    pub new: String,
    /// An endpoint setting: listed, never a reason for a gate to fail.
    pub endpoint: bool,
}

/// The settings the two runs differ in, beyond their axes, in path order.
///
/// `clock` is the clock the command puts both runs' answer times on: on the user clock
/// (`--clock user`) runs stored on either are alike, so the clock is no changed setting.
pub(crate) fn changed_settings(
    base: &StoredRun,
    new: &StoredRun,
    ignore: &[String],
    clock: Clock,
) -> Vec<ChangedSetting> {
    let exempt = exempt_paths(base, new, ignore);
    let (mut b, mut n) = (Vec::new(), Vec::new());
    flatten("", &base.settings, &mut b);
    flatten("", &new.settings, &mut n);
    let mut paths: Vec<&String> = b.iter().chain(n.iter()).map(|(p, _)| p).collect();
    paths.sort();
    paths.dedup();
    let value = |list: &[(String, String)], path: &str| {
        list.iter()
            .find(|(p, _)| p == path)
            .map_or_else(|| "unset".to_string(), |(_, v)| v.clone())
    };
    let mut out: Vec<ChangedSetting> = paths
        .into_iter()
        .filter(|p| !exempt.iter().any(|e| under(p, e)))
        .filter_map(|p| {
            let (bv, nv) = (value(&b, p), value(&n, p));
            (bv != nv).then(|| ChangedSetting {
                endpoint: under(p, "endpoint"),
                setting: p.clone(),
                base: bv,
                new: nv,
            })
        })
        .collect();
    let (bc, nc) = (clock_of(base), clock_of(new));
    if bc != nc && clock == Clock::Kernel {
        out.push(ChangedSetting {
            setting: "clock".into(),
            base: bc.into(),
            new: nc.into(),
            endpoint: false,
        });
        out.sort_by(|a, b| a.setting.cmp(&b.setting));
    }
    out
}

/// The clock a run's stored answer times are on, as a setting: `kernel` when the kernel's
/// receive stamps timed any of its answers, else `user` (the client's reads: every run
/// stored before the stamps, whose `kernel_clock_ratio` is unset, and runs without them).
/// TTFT on one is not TTFT on the other: the difference is the client's own delay.
fn clock_of(run: &StoredRun) -> &'static str {
    match run.metrics.get("kernel_clock_ratio").copied().flatten() {
        Some(r) if r > 0.0 => "kernel",
        _ => "user",
    }
}

/// Whether `path` is `prefix` or lies under it.
fn under(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The setting paths that belong to an axis value of either run, or to an ignored axis.
fn exempt_paths(base: &StoredRun, new: &StoredRun, ignore: &[String]) -> Vec<String> {
    let mut axes: Vec<String> = Vec::new();
    for run in [base, new] {
        if let Value::Object(map) = &run.axes {
            axes.extend(map.keys().cloned());
        }
    }
    // An endpoint's labels are in its environment, which `compare` lists on its own.
    let mut out = vec!["endpoint.labels".to_string()];
    for axis in &axes {
        match axis.as_str() {
            "endpoint" | "model" | "dataset" => out.push(format!("{axis}.name")),
            "load" | "cache_state" | "tokenize_prompt" | "api" | "repeat" => out.push(axis.clone()),
            "extra" => out.push("request.extra".into()),
            other => {
                out.push(format!("dataset.{other}"));
                out.push(format!("request.{other}"));
            }
        }
    }
    for axis in ignore {
        match axis.as_str() {
            "endpoint" | "model" | "dataset" | "load" | "cache_state" | "tokenize_prompt"
            | "api" | "repeat" => out.push(axis.clone()),
            "extra" => out.push("request.extra".into()),
            other => {
                out.push(format!("dataset.{other}"));
                out.push(format!("request.{other}"));
            }
        }
    }
    out
}

/// `(path, value)` of every leaf of a settings tree; lists and scalars are leaves.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&path, v, out);
            }
        }
        Value::Null => {}
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// Whether `--allow-changed` names `setting`: its whole path, a table above it
/// (`dataset`), or its last part(s) (`output_tokens`).
pub fn allowed(setting: &str, allow: &[String]) -> bool {
    allow.iter().any(|a| {
        let a = a.trim();
        !a.is_empty() && (under(setting, a) || setting.ends_with(&format!(".{a}")))
    })
}

/// The changes that make a comparison unlike: not endpoint settings, not allowed.
pub fn judged<'a>(changes: &'a [ChangedSetting], allow: &[String]) -> Vec<&'a ChangedSetting> {
    changes
        .iter()
        .filter(|c| !c.endpoint && !allowed(&c.setting, allow))
        .collect()
}

/// `request.output_tokens 16 → 64`.
pub(crate) fn describe(c: &ChangedSetting) -> String {
    format!("{} {} → {}", c.setting, c.base, c.new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(axes: Value, settings: Value) -> StoredRun {
        StoredRun {
            id: "r".into(),
            ordinal: 1,
            axes,
            settings,
            status: crate::store::RunStatus::Done,
            started_unix_ms: None,
            finished_unix_ms: None,
            warnings: Vec::new(),
            facts: crate::record::RunFacts::default(),
            error: None,
            metrics: Default::default(),
            verdict: Default::default(),
        }
    }

    #[test]
    fn only_settings_beyond_the_axes_count() {
        let settings = |out: u32, url: &str, input: u32| {
            json!({"endpoint": {"name": "e", "base_url": url}, "dataset": {"name": "d",
                "input_tokens": input}, "request": {"output_tokens": out}, "seed": 1})
        };
        let axes = json!({"input_tokens": 64});
        let base = run(axes.clone(), settings(16, "http://a", 64));
        let new = run(axes, settings(64, "http://b", 128));
        let changes = changed_settings(&base, &new, &[], Clock::Kernel);
        let shown: Vec<String> = changes.iter().map(describe).collect();
        assert_eq!(
            shown,
            [
                "endpoint.base_url http://a → http://b",
                "request.output_tokens 16 → 64"
            ]
        );
        assert!(changes[0].endpoint && !changes[1].endpoint);
        assert_eq!(judged(&changes, &[]).len(), 1);
        for allow in ["request.output_tokens", "output_tokens", "request"] {
            assert!(judged(&changes, &[allow.to_string()]).is_empty(), "{allow}");
        }
        assert_eq!(judged(&changes, &["tokens".to_string()]).len(), 1);
        // An ignored axis's settings differ by design.
        let ignored = changed_settings(&base, &new, &["output_tokens".into()], Clock::Kernel);
        assert!(judged(&ignored, &[]).is_empty(), "{ignored:?}");
        let unset = run(json!({}), json!({"request": {}}));
        let set = run(json!({}), json!({"request": {"temperature": 0.0}}));
        assert_eq!(
            describe(&changed_settings(&unset, &set, &[], Clock::Kernel)[0]),
            "request.temperature unset → 0.0"
        );
    }

    /// A suite stored before the kernel's receive stamps (no `kernel_clock_ratio`) is on
    /// the user clock: compared with one on the kernel's, the clock is a changed setting
    /// that makes the comparison unlike unless `--allow-changed clock`.
    #[test]
    fn a_run_on_another_clock_is_a_changed_setting() {
        let on = |ratio: Option<f64>| {
            let mut r = run(json!({}), json!({"seed": 1}));
            r.metrics.insert("kernel_clock_ratio".into(), ratio);
            r
        };
        let old = run(json!({}), json!({"seed": 1}));
        let changes = changed_settings(&old, &on(Some(1.0)), &[], Clock::Kernel);
        let shown: Vec<String> = changes.iter().map(describe).collect();
        assert_eq!(shown, ["clock user → kernel"]);
        assert_eq!(judged(&changes, &[]).len(), 1);
        assert!(judged(&changes, &["clock".into()]).is_empty());
        assert!(changed_settings(&on(Some(0.0)), &old, &[], Clock::Kernel).is_empty());
        assert!(changed_settings(&on(Some(1.0)), &on(Some(0.5)), &[], Clock::Kernel).is_empty());
        // Both moved to the user clock (`--clock user`), the two runs are alike.
        assert!(changed_settings(&old, &on(Some(1.0)), &[], Clock::User).is_empty());
    }
}
