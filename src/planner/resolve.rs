//! Turns one matrix point into fully resolved `RunSettings`: picks the endpoint, model
//! and dataset, applies axis overrides to the dataset and request settings, and checks
//! the result. Problems are located at the matrix key (or the table) they come from.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::matrix::Point;
use super::run::{Named, RunSettings};
use crate::plan::diag::{suggest, Diagnostic, Span};
use crate::plan::matrix::{axis_target, AxisTarget};
use crate::plan::node::Step;
use crate::plan::semantic::dataset_problems;
use crate::plan::{ApiSpec, CacheState, DatasetPlan, LoadSpec, LoadedPlan, WarmupSpec};

pub(crate) struct Resolver<'a> {
    pub plan: &'a LoadedPlan,
}

fn matrix_path(key: &str) -> Vec<Step> {
    vec![Step::Key("matrix".into()), Step::Key(key.into())]
}

impl Resolver<'_> {
    fn at(&self, key: &str) -> Span {
        self.plan.locate(&matrix_path(key))
    }

    /// Resolves one point; errors and warnings go to `diags`. A dataset key the run's
    /// dataset kind does not take is left out and named in `dropped` (an axis shared by
    /// datasets of several kinds applies to those it fits).
    pub fn resolve(
        &self,
        point: &Point,
        dropped: &mut Vec<String>,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<(RunSettings, DatasetPlan)> {
        let spec = &self.plan.spec;
        let endpoint = self.pick(point, "endpoint", spec.endpoints.keys(), diags)?;
        let model = self.pick(point, "model", spec.models.keys(), diags)?;
        let dataset_name = self.pick(point, "dataset", spec.datasets.keys(), diags)?;
        let endpoint_spec = spec.endpoints.get(&endpoint)?.clone();
        let model_spec = spec.models.get(&model)?.clone();
        let dataset_spec = spec.datasets.get(&dataset_name)?;
        let (dataset_json, request_json) = self.apply_axes(point, dataset_spec, dropped, diags)?;
        let dataset = self.typed(dataset_json, "dataset", diags)?;
        let request = self.typed(request_json, "defaults", diags)?;
        for (field, message) in dataset_problems(&dataset) {
            let at = if let Some(value) = point.get(&field) {
                super::locate::value_span(self.plan, &field, value)
            } else {
                self.plan.locate(&[
                    Step::Key("datasets".into()),
                    Step::Key(dataset_name.clone()),
                    Step::Key(field.clone()),
                ])
            };
            diags.push(Diagnostic::error(
                format!("dataset `{dataset_name}`: {message}"),
                Some(at),
            ));
        }
        let cache_state: CacheState =
            self.axis_or(point, "cache_state", CacheState::Cold, diags)?;
        let tokenize_prompt: bool = self.axis_or(point, "tokenize_prompt", false, diags)?;
        let api = self.api(point, tokenize_prompt, endpoint_spec.api, diags)?;
        super::request_checks::check(self.plan, point, api, &request, diags);
        super::request_checks::check_template(self.plan, api, &request, dataset.kind, diags);
        super::request_checks::check_dataset_api(self.plan, point, api, dataset.kind, diags);
        self.check_tokenizer(&model, &model_spec, &dataset, tokenize_prompt, diags);
        let load = self.load(point, dataset.kind, diags)?;
        let queue = super::explore::queue_signal_problem(&load, endpoint_spec.telemetry.as_ref());
        if let (Some(problem), Some(value)) = (queue, point.get("load")) {
            let at = super::locate::value_span(self.plan, "load", value);
            diags.push(Diagnostic::error(problem, Some(at)));
        }
        let model = Named {
            name: model,
            spec: model_spec,
        };
        let run = super::mix::MixRun {
            dataset: &dataset_name,
            api,
            tokenize_prompt,
            model: &model,
        };
        let (mix, typed) = self.typed_dataset(&run, &dataset, point, diags)?;
        let settings = RunSettings {
            endpoint: Named {
                name: endpoint,
                spec: endpoint_spec,
            },
            model,
            dataset: Named {
                name: dataset_name,
                spec: dataset,
            },
            request,
            api,
            cache_state,
            tokenize_prompt,
            load,
            seed: spec.plan.seed,
            repeat: None,
            mix,
            checks: spec.checks.clone(),
        };
        Some((settings, typed))
    }

    /// The run's API: the axis's, else the endpoint's, else chat (completions for token
    /// ids, which only it takes).
    fn api(
        &self,
        point: &Point,
        tokenize_prompt: bool,
        endpoint_api: Option<ApiSpec>,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<ApiSpec> {
        let default_api = if tokenize_prompt {
            ApiSpec::Completions
        } else {
            endpoint_api.unwrap_or(ApiSpec::Chat)
        };
        let api: ApiSpec = self.axis_or(point, "api", default_api, diags)?;
        if tokenize_prompt && api != ApiSpec::Completions {
            diags.push(
                Diagnostic::error("`tokenize_prompt = true` sends token ids, which only the completions API takes", Some(self.at("api")))
                    .with_help("use api = \"completions\" for token-id runs (exclude the other combinations)"),
            );
            return None;
        }
        Some(api)
    }

    /// The run's dataset and request settings (as JSON) with the point's values applied;
    /// dataset keys the dataset's kind does not take go to `dropped` instead.
    fn apply_axes(
        &self,
        point: &Point,
        dataset: &crate::plan::DatasetSpec,
        dropped: &mut Vec<String>,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<(Value, Value)> {
        let takes = crate::plan::dataset_keys::keys_for(dataset.kind);
        let mut dataset_json = serde_json::to_value(dataset).ok()?;
        let mut request_json = serde_json::to_value(&self.plan.spec.defaults).ok()?;
        for (key, value) in point {
            let target = match axis_target(key) {
                Some(AxisTarget::Dataset) if !takes.contains(&key.as_str()) => {
                    dropped.push(key.clone());
                    continue;
                }
                Some(AxisTarget::Dataset) => &mut dataset_json,
                Some(AxisTarget::Request) => &mut request_json,
                Some(AxisTarget::Run) => continue,
                None => {
                    self.unknown_include_key(key, diags);
                    return None;
                }
            };
            if let Some(map) = target.as_object_mut() {
                match map.get_mut(key.as_str()) {
                    // An `extra` value adds to (or changes) `[defaults].extra`.
                    Some(base) if key == "extra" => super::matrix::merge_tables(base, value),
                    _ => {
                        map.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        Some((dataset_json, request_json))
    }

    /// A run whose prompts need exact token counts and whose model has no tokenizer cannot
    /// be prepared: say so now, not when the run starts.
    pub(super) fn check_tokenizer(
        &self,
        model: &str,
        model_spec: &crate::plan::ModelSpec,
        dataset: &crate::plan::DatasetSpec,
        tokenize_prompt: bool,
        diags: &mut Vec<Diagnostic>,
    ) {
        if model_spec.tokenizer.is_some() {
            return;
        }
        let needs = match tokenize_prompt {
            true => Some("`tokenize_prompt = true`"),
            false => crate::plan::dataset_plan::spec_needs_tokenizer(dataset),
        };
        if let Some(what) = needs {
            let at = self
                .plan
                .locate(&[Step::Key("models".into()), Step::Key(model.into())]);
            diags.push(
                Diagnostic::error(
                    format!("{what} needs the model's tokenizer, and model `{model}` has none"),
                    Some(at),
                )
                .with_help(
                    "set `tokenizer` on the model (a folder with tokenizer.json, e.g. a Hugging \
                     Face snapshot), or use a dataset that needs no token counts (prompt, \
                     lines, jsonl, sharegpt)",
                ),
            );
        }
    }

    fn unknown_include_key(&self, key: &str, diags: &mut Vec<Diagnostic>) {
        let at = self
            .plan
            .locate(&[Step::Key("matrix".into()), Step::Key("include".into())]);
        diags.push(Diagnostic::error(
            format!("`{key}` in an include or exclude entry is not an axis or a setting"),
            Some(at),
        ));
    }

    /// The value of an axis naming a table (endpoint/model/dataset), or the only one defined.
    fn pick<'k>(
        &self,
        point: &Point,
        axis: &str,
        names: impl Iterator<Item = &'k String> + Clone,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<String> {
        let section = format!("{axis}s");
        match point.get(axis) {
            Some(Value::String(name)) => {
                if names.clone().any(|n| n == name) {
                    return Some(name.clone());
                }
                let mut d = Diagnostic::error(
                    format!("`{name}` is not a defined {axis} ([{section}.{name}] is missing)"),
                    Some(self.at(axis)),
                );
                if let Some(s) = suggest(name, names.map(String::as_str)) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                diags.push(d);
                None
            }
            Some(other) => {
                diags.push(Diagnostic::error(
                    format!("`{axis}` must name a table of [{section}], found {other}"),
                    Some(self.at(axis)),
                ));
                None
            }
            None => {
                let all: Vec<&String> = names.collect();
                if all.len() == 1 {
                    return Some(all[0].clone());
                }
                if !all.is_empty() {
                    let list = all
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ");
                    diags.push(
                        Diagnostic::error(format!("the plan defines several {section} ({list}) but a run does not choose one"), Some(self.plan.locate(&[Step::Key("matrix".into())])))
                            .with_help(format!("add `{axis} = [...]` to [matrix] (or to the include entry)")),
                    );
                }
                None
            }
        }
    }

    fn axis_or<T: DeserializeOwned>(
        &self,
        point: &Point,
        key: &str,
        default: T,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<T> {
        match point.get(key) {
            None => Some(default),
            Some(v) => match serde_json::from_value(v.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    diags.push(Diagnostic::error(
                        format!("invalid `{key}`: {e}"),
                        Some(self.at(key)),
                    ));
                    None
                }
            },
        }
    }

    fn typed<T: DeserializeOwned>(
        &self,
        value: Value,
        what: &str,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<T> {
        match serde_json::from_value(value) {
            Ok(t) => Some(t),
            Err(e) => {
                diags.push(Diagnostic::error(
                    format!("invalid {what} setting from the matrix: {e}"),
                    Some(self.at("matrix")),
                ));
                None
            }
        }
    }

    /// A run's load; a trace replay needs no concurrency or rate (the trace sets the times).
    fn load(
        &self,
        point: &Point,
        kind: crate::plan::DatasetKind,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<LoadSpec> {
        use crate::plan::DatasetKind;
        let trace = kind == DatasetKind::Trace;
        let Some(value) = point.get("load") else {
            if trace {
                // Every record, at its recorded time.
                return Some(LoadSpec::default());
            }
            diags.push(
                Diagnostic::error(
                    "a run has no `load`",
                    Some(self.plan.locate(&[Step::Key("matrix".into())])),
                )
                .with_help(
                    "add e.g. `load = { concurrency = 4, requests = 64, warmup = 4 }` to [matrix]",
                ),
            );
            return None;
        };
        let at = super::locate::value_span(self.plan, "load", value);
        let load: LoadSpec = match serde_json::from_value(value.clone()) {
            Ok(load) => load,
            Err(e) => {
                diags.push(Diagnostic::error(format!("invalid `load`: {e}"), Some(at)));
                return None;
            }
        };
        let timed_by_trace =
            trace && load.concurrency.is_none() && load.rate.is_none() && load.search.is_none();
        let problems = if timed_by_trace {
            Vec::new()
        } else {
            load_problems(&load)
        };
        for problem in problems {
            diags.push(Diagnostic::error(problem, Some(at)));
        }
        let timed_elsewhere = matches!(
            kind,
            DatasetKind::Trace
                | DatasetKind::RandomMultiTurn
                | DatasetKind::Conversations
                | DatasetKind::ToolCalls
        );
        if load.ramp.is_some() && timed_elsewhere {
            let why = "a ramp times single requests: a trace keeps its recorded times and a multi-turn dataset its conversations (use a `random` or file dataset)";
            diags.push(Diagnostic::error(why, Some(at)));
        }
        if load.explore.is_some() && timed_elsewhere {
            let why = "an exploring load sends single requests: a trace keeps its recorded times and a multi-turn dataset its conversations (use a `random` or file dataset)";
            diags.push(Diagnostic::error(why, Some(at)));
        }
        if load.cancel.is_some() && timed_elsewhere {
            let why = "`cancel` aborts single requests: a trace replays its records and a multi-turn dataset builds each turn from the last answer (use a `random`, file or mix dataset)";
            diags.push(Diagnostic::error(why, Some(at)));
        }
        if load.concurrency_ramp.is_some() && timed_elsewhere {
            let why = "a concurrency ramp sends single requests: a trace keeps its recorded times and a multi-turn dataset its conversations (use a `random` or file dataset)";
            diags.push(Diagnostic::error(why, Some(at)));
        }
        if let Some(w) = warmup_warning(&load) {
            diags.push(w.clone_with_span(at));
        }
        Some(load)
    }
}

trait WithSpan {
    fn clone_with_span(&self, span: Span) -> Diagnostic;
}

impl WithSpan for Diagnostic {
    fn clone_with_span(&self, span: Span) -> Diagnostic {
        let mut d = self.clone();
        d.span = Some(span);
        d
    }
}

/// Impossible load settings.
pub fn load_problems(load: &LoadSpec) -> Vec<String> {
    let mut out = super::search::search_problems(load);
    out.extend(super::saturation::saturation_problems(load));
    out.extend(super::cancel::cancel_problems(load));
    if let Some(explore) = &load.explore {
        out.extend(super::explore::explore_problems(load, explore));
        return out;
    }
    if let Some(ramp) = &load.concurrency_ramp {
        out.extend(super::concurrency_ramp::concurrency_ramp_problems(
            load, ramp,
        ));
        return out;
    }
    if load.search.is_some() && load.ramp.is_none() {
        return out;
    }
    if let Some(ramp) = &load.ramp {
        out.extend(super::ramp::ramp_load_problems(load, ramp));
        out.extend(burstiness_problem(load));
        return out;
    }
    match (load.concurrency, load.rate) {
        (Some(_), Some(_)) => out.push(
            "a load has both `concurrency` (closed loop) and `rate` (open loop): keep one"
                .to_string(),
        ),
        (None, None) => {
            out.push("a load needs `concurrency` (closed loop) or `rate` (open loop)".to_string())
        }
        _ => {}
    }
    if load.requests.is_none() && load.duration.is_none() {
        out.push("a load needs `requests` or `duration` (or both)".to_string());
    }
    if load.concurrency.is_some()
        && (load.arrivals.is_some() || load.burstiness.is_some() || load.max_in_flight.is_some())
    {
        out.push("`arrivals`, `burstiness` and `max_in_flight` apply to open loops (`rate`), not to `concurrency`".to_string());
    } else {
        out.extend(burstiness_problem(load));
    }
    out.extend(warmup_problem(load));
    out
}

/// `burstiness` shapes gamma arrivals only: with another (or the default Poisson)
/// process it would be ignored.
pub(crate) fn burstiness_problem(load: &LoadSpec) -> Option<String> {
    let gamma = load.arrivals == Some(crate::plan::Arrivals::Gamma);
    (load.burstiness.is_some() && !gamma).then(|| {
        "`burstiness` has no effect without `arrivals = \"gamma\"` (burstiness 1 is Poisson)"
            .to_string()
    })
}

/// A warmup share that is not one: `"10%"`, from 0% to 1000% of the measured requests.
pub(crate) fn warmup_problem(load: &LoadSpec) -> Option<String> {
    match &load.warmup {
        Some(WarmupSpec::Share(s)) if parse_share(s).is_none() => Some(format!(
            "warmup `{s}` is neither a count nor a share from \"0%\" to \"1000%\" (like \"10%\")"
        )),
        _ => None,
    }
}

/// `"10%"` → 0.10.
pub fn parse_share(text: &str) -> Option<f64> {
    let n: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    (0.0..=1000.0).contains(&n).then_some(n / 100.0)
}

/// The number of warmup requests a load asks for.
pub fn warmup_count(load: &LoadSpec) -> u32 {
    match &load.warmup {
        None => 0,
        Some(WarmupSpec::Count(n)) => *n,
        Some(WarmupSpec::Share(s)) => {
            let share = parse_share(s).unwrap_or(0.0);
            (share * f64::from(load.requests.unwrap_or(0))).ceil() as u32
        }
    }
}

fn warmup_warning(load: &LoadSpec) -> Option<Diagnostic> {
    let c = load.concurrency?;
    let w = warmup_count(load);
    (w < c).then(|| {
        Diagnostic::warning(
            format!("warmup {w} is below concurrency {c}: the first measured requests meet a server that is not yet busy"),
            None,
        )
        .with_help(format!("use warmup = {c}"))
    })
}
