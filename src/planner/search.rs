//! SLA-search loads in the planner: the checks of a `load = { search = ... }` entry, and
//! the probe runs a search expands into at execution time (concrete load, stable id
//! derived from the search run's id, the probed value and the trial). Knows nothing
//! about HTTP or storage; the bracketing itself is `search`'s.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::run::{dataset_seed, RunSpec};
use crate::metrics::condition::{parse_condition, ConditionError};
use crate::metrics::sla::{parse_multiple, Bounds, Goal, Precision};
use crate::plan::ranges::{MAX_CONCURRENCY, MAX_REQUESTS, MAX_STEP_MULTIPLE};
use crate::plan::{LoadSpec, PrecisionSpec, SearchVariable, StepRequests, WarmupSpec};

/// Fewest measured requests of a probe sized as a multiple (`"4x"`).
pub(crate) const MIN_STEP_REQUESTS: u32 = 16;
/// Default `max` of a concurrency search.
pub(crate) const DEFAULT_MAX_CONCURRENCY: f64 = 512.0;
/// Default `max` of a rate search.
pub(crate) const DEFAULT_MAX_RATE: f64 = 1000.0;
/// Default `requests_per_step`.
pub(crate) const DEFAULT_MULTIPLE: f64 = 4.0;
/// Default precision: 5% of the passing value.
pub(crate) const DEFAULT_PRECISION: f64 = 0.05;

/// Problems of a load that sets any search key (empty when it is a valid search or
/// not a search at all).
pub(crate) fn search_problems(load: &LoadSpec) -> Vec<String> {
    let mut out = Vec::new();
    let Some(var) = load.search else {
        let set: Vec<&str> = [
            ("slo", !load.slo.is_empty()),
            ("min", load.min.is_some()),
            ("max", load.max.is_some()),
            ("requests_per_step", load.requests_per_step.is_some()),
            ("trials", load.trials.is_some()),
            ("precision", load.precision.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect();
        if let Some((metric, text)) = load.slo.iter().find(|(_, t)| Goal::parse(t).is_some()) {
            out.push(format!(
                "the objective `{metric} = \"{}\"` applies only to a search: add `search = \"concurrency\"` (or \"rate\")",
                text.trim()
            ));
        } else if !set.is_empty() {
            out.push(format!(
                "`{}` apply only to a search: add `search = \"concurrency\"` (or \"rate\")",
                set.join("`, `")
            ));
        }
        return out;
    };
    fixed_keys(load, &mut out);
    if var == SearchVariable::Concurrency
        && (load.arrivals.is_some() || load.burstiness.is_some() || load.max_in_flight.is_some())
    {
        out.push("`arrivals`, `burstiness` and `max_in_flight` apply to a rate search, not to a concurrency search".into());
    } else {
        out.extend(super::resolve::burstiness_problem(load));
    }
    if load.slo.is_empty() {
        out.push("a search needs `slo`, e.g. slo = { ttft_p99 = \"<= 2s\" }".into());
    }
    out.extend(objective_problems(load));
    for (metric, text) in load.slo.iter().filter(|(_, t)| Goal::parse(t).is_none()) {
        match parse_condition(metric, text) {
            Err(e) => out.push(format!("search slo: {e}")),
            Ok(c) if c.is_relative() => out.push(format!(
                "search slo `{metric} = \"{text}\"`: a search SLO is absolute (a percentage needs a baseline)"
            )),
            Ok(_) => {}
        }
    }
    out.extend(range_problems(load, var));
    out.extend(super::resolve::warmup_problem(load));
    if let Some(StepRequests::Multiple(m)) = &load.requests_per_step {
        if parse_multiple(m).is_none_or(|x| x > MAX_STEP_MULTIPLE) {
            out.push(format!(
                "`requests_per_step = \"{m}\"` is neither a count nor a multiple above \"0x\" and at most \"{MAX_STEP_MULTIPLE}x\" (like \"4x\")"
            ));
        }
    }
    if let Some(p @ PrecisionSpec::Share(s)) = &load.precision {
        if precision_of(Some(p)).is_none() {
            out.push(format!(
                "`precision = \"{s}\"` is neither a width nor a share above \"0%\" and at most \"1000%\" (like \"5%\")"
            ));
        }
    }
    out
}

/// Keys of a fixed load that a search sets itself or does not take.
fn fixed_keys(load: &LoadSpec, out: &mut Vec<String>) {
    let chosen = "the search chooses it; set `min` and `max`";
    for (key, set, help) in [
        ("concurrency", load.concurrency.is_some(), chosen),
        ("rate", load.rate.is_some(), chosen),
        (
            "requests",
            load.requests.is_some(),
            "use `requests_per_step`",
        ),
        (
            "repeat",
            load.repeat.is_some(),
            "a search is not a fixed load; use `trials` for runs per probed value",
        ),
    ] {
        if set {
            out.push(format!("a search cannot set `{key}`: {help}"));
        }
    }
}

/// Problems of the objectives (`output_tps = "max"`) of a search's `slo`.
fn objective_problems(load: &LoadSpec) -> Vec<String> {
    let mut out = Vec::new();
    let objectives: Vec<(&String, &String)> = load
        .slo
        .iter()
        .filter(|(_, t)| Goal::parse(t).is_some())
        .collect();
    for (metric, text) in &objectives {
        if let Err(e) = parse_condition(metric, "<= 0") {
            let hint = match e {
                ConditionError::UnknownMetric {
                    suggestion: Some(s),
                    ..
                } => format!(" (did you mean `{s}`?)"),
                _ => String::new(),
            };
            out.push(format!(
                "search slo objective `{metric} = \"{}\"`: unknown metric `{metric}`{hint}",
                text.trim()
            ));
        }
    }
    if objectives.len() > 1 {
        let named: Vec<String> = objectives
            .iter()
            .map(|(m, t)| format!("`{m} = \"{}\"`", t.trim()))
            .collect();
        out.push(format!(
            "a search has at most one objective (`min` or `max`), this one has {}: keep one and make the others limits like \"<= 2s\"",
            named.join(", ")
        ));
    }
    out
}

fn range_problems(load: &LoadSpec, var: SearchVariable) -> Vec<String> {
    let mut out = Vec::new();
    let (min, max) = (
        load.min.unwrap_or(1.0),
        load.max.unwrap_or(default_max(var)),
    );
    let whole = |v: f64| v.fract() == 0.0;
    if min >= max {
        out.push(format!("search `min` ({min}) must be below `max` ({max})"));
    }
    if var == SearchVariable::Concurrency && !(whole(min) && whole(max)) {
        out.push("a concurrency search needs whole `min` and `max`".into());
    }
    let most = f64::from(MAX_CONCURRENCY);
    if var == SearchVariable::Concurrency && max > most {
        out.push(format!(
            "a concurrency search's `max` ({max}) must be at most {MAX_CONCURRENCY}"
        ));
    }
    out
}

fn default_max(var: SearchVariable) -> f64 {
    match var {
        SearchVariable::Concurrency => DEFAULT_MAX_CONCURRENCY,
        SearchVariable::Rate => DEFAULT_MAX_RATE,
    }
}

fn precision_of(p: Option<&PrecisionSpec>) -> Option<Precision> {
    match p {
        None => Some(Precision::Relative(DEFAULT_PRECISION)),
        Some(PrecisionSpec::Absolute(w)) => {
            (w.is_finite() && *w > 0.0).then_some(Precision::Absolute(*w))
        }
        Some(PrecisionSpec::Share(s)) => super::parse_share(s)
            .filter(|x| *x > 0.0)
            .map(Precision::Relative),
    }
}

/// The search's range and precision (defaults applied). `None` when the load is not a
/// valid search.
pub fn bounds(load: &LoadSpec) -> Option<Bounds> {
    let var = load.search?;
    Some(Bounds {
        min: load.min.unwrap_or(1.0),
        max: load.max.unwrap_or(default_max(var)),
        integer: var == SearchVariable::Concurrency,
        precision: precision_of(load.precision.as_ref())?,
    })
}

/// The fixed load of one probe at `value`.
pub(crate) fn probe_load(search: &LoadSpec, value: f64) -> LoadSpec {
    let concurrency = search.search == Some(SearchVariable::Concurrency);
    let requests = match &search.requests_per_step {
        Some(StepRequests::Count(n)) => *n,
        other => {
            let m = match other {
                Some(StepRequests::Multiple(m)) => parse_multiple(m).unwrap_or(DEFAULT_MULTIPLE),
                _ => DEFAULT_MULTIPLE,
            };
            ((m * value).ceil() as u32).clamp(MIN_STEP_REQUESTS, MAX_REQUESTS)
        }
    };
    let warmup = match (&search.warmup, concurrency) {
        (Some(w), _) => Some(w.clone()),
        (None, true) => Some(WarmupSpec::Count(value as u32)),
        (None, false) => None,
    };
    LoadSpec {
        ramp: None,
        concurrency_ramp: None,
        explore: None,
        concurrency: concurrency.then_some(value as u32),
        rate: (!concurrency).then_some(value),
        requests: Some(requests),
        warmup,
        duration: search.duration,
        arrivals: search.arrivals,
        burstiness: search.burstiness,
        max_in_flight: search.max_in_flight,
        stop_when: None,
        cancel: None,
        on_saturation: None,
        repeat: None,
        search: None,
        slo: Default::default(),
        min: None,
        max: None,
        requests_per_step: None,
        trials: None,
        precision: None,
    }
}

/// The stable id of a probe: derived from its search run's id, the value and the trial.
pub(crate) fn probe_id(search_id: &str, var: SearchVariable, value: f64, trial: u32) -> String {
    let var = match var {
        SearchVariable::Concurrency => "concurrency",
        SearchVariable::Rate => "rate",
    };
    let text = format!("{search_id}/{var}={value}/trial={trial}");
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The run of one probe: the search run's settings with the probe's fixed load, and a
/// request set of its own (cold prompts stay unseen across probes and trials).
pub(crate) fn probe_run(search: &RunSpec, value: f64, trial: u32) -> Option<RunSpec> {
    let var = search.settings.load.search?;
    let mut settings = search.settings.clone();
    settings.load = probe_load(&search.settings.load, value);
    let mut axes = search.axes.clone();
    if axes.contains_key("load") {
        axes.insert(
            "load".into(),
            serde_json::to_value(&settings.load).unwrap_or(Value::Null),
        );
    }
    let seed =
        dataset_seed(&settings).wrapping_add(u64::from(trial).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    Some(RunSpec {
        ordinal: search.ordinal,
        id: probe_id(&search.id, var, value, trial),
        axes,
        dataset_seed: seed,
        // A probe changes only the load: its dataset and requests are the search's.
        dataset: search.dataset.clone(),
        request: search.request.clone(),
        load: super::RunLoad::of(&settings.load, settings.dataset.spec.kind, settings.seed),
        settings,
    })
}

/// The success floor a search applies (its `slo`'s `success_ratio`, or the default);
/// `None` for a load that is not a valid search.
pub(crate) fn success_floor(load: &LoadSpec) -> Option<crate::metrics::sla::SuccessFloor> {
    load.search?;
    let (_, limits) = crate::metrics::sla::split_slo(&load.slo).ok()?;
    Some(crate::metrics::sla::with_success_floor(limits).1)
}

/// Trials per probed value.
pub fn trials(load: &LoadSpec) -> u32 {
    load.trials.unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(json: &str) -> LoadSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn valid_search_has_no_problems_and_bounds() {
        let l = search(r#"{"search":"concurrency","slo":{"ttft_p99":"<= 2s"},"min":1,"max":64}"#);
        assert!(search_problems(&l).is_empty(), "{:?}", search_problems(&l));
        let b = bounds(&l).unwrap();
        assert_eq!((b.min, b.max, b.integer), (1.0, 64.0, true));
        assert_eq!(b.precision, Precision::Relative(0.05));
    }

    #[test]
    fn problems_are_named() {
        let l = search(
            r#"{"search":"concurrency","concurrency":4,"requests":8,"slo":{"ttft_p98":"<= 2s"},"min":8,"max":4,"trials":0,"precision":"x","requests_per_step":"4y","arrivals":"constant"}"#,
        );
        let all = search_problems(&l).join("\n");
        for needle in [
            "cannot set `concurrency`",
            "cannot set `requests`",
            "ttft_p98",
            "below `max`",
            "`precision = \"x\"`",
            "\"4y\"",
            "`arrivals`",
        ] {
            assert!(all.contains(needle), "{needle} missing from:\n{all}");
        }
        let l = search(r#"{"search":"rate","slo":{}, "min": 0.5, "max": 2.5}"#);
        assert!(search_problems(&l).join("\n").contains("needs `slo`"));
        let l = search(r#"{"search":"concurrency","slo":{"ttft_p99":"<= 2s"},"min":1.5}"#);
        assert!(search_problems(&l).join("\n").contains("whole"));
        let l = search(r#"{"concurrency":4,"requests":8,"trials":3}"#);
        assert!(search_problems(&l)
            .join("\n")
            .contains("apply only to a search"));
    }

    #[test]
    fn objectives_are_checked() {
        let ok = search(
            r#"{"search":"concurrency","slo":{"output_tps":"max","ttft_p99":"<= 2s"},"max":64}"#,
        );
        assert!(
            search_problems(&ok).is_empty(),
            "{:?}",
            search_problems(&ok)
        );
        let only = search(r#"{"search":"rate","slo":{"ttft_p99":" min "},"max":64}"#);
        assert!(
            search_problems(&only).is_empty(),
            "{:?}",
            search_problems(&only)
        );
        let two = search(r#"{"search":"concurrency","slo":{"output_tps":"max","ttft_p99":"min"}}"#);
        let all = search_problems(&two).join("\n");
        assert!(all.contains("at most one objective"), "{all}");
        let unknown = search(r#"{"search":"concurrency","slo":{"output_tsp":"max"}}"#);
        let all = search_problems(&unknown).join("\n");
        assert!(
            all.contains("unknown metric `output_tsp`") && all.contains("output_tps"),
            "{all}"
        );
        let fixed = search(r#"{"concurrency":4,"requests":8,"slo":{"output_tps":"max"}}"#);
        let all = search_problems(&fixed).join("\n");
        assert!(all.contains("applies only to a search"), "{all}");
    }

    #[test]
    fn probe_loads_and_ids() {
        let l = search(
            r#"{"search":"concurrency","slo":{"ttft_p99":"<= 2s"},"requests_per_step":"4x"}"#,
        );
        let p = probe_load(&l, 16.0);
        assert_eq!(
            (p.concurrency, p.requests, p.rate),
            (Some(16), Some(64), None)
        );
        assert_eq!(p.warmup, Some(WarmupSpec::Count(16)));
        assert_eq!(probe_load(&l, 1.0).requests, Some(MIN_STEP_REQUESTS));
        let r = search(r#"{"search":"rate","slo":{"ttft_p99":"<= 2s"},"requests_per_step":40}"#);
        let p = probe_load(&r, 12.5);
        assert_eq!((p.rate, p.requests, p.warmup), (Some(12.5), Some(40), None));
        let a = probe_id("abc", SearchVariable::Concurrency, 16.0, 0);
        assert_eq!(a.len(), 12);
        assert_eq!(a, probe_id("abc", SearchVariable::Concurrency, 16.0, 0));
        assert_ne!(a, probe_id("abc", SearchVariable::Concurrency, 16.0, 1));
        assert_ne!(a, probe_id("abd", SearchVariable::Concurrency, 16.0, 0));
    }
}
