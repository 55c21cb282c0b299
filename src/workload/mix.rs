//! A mix's run-side parts: each class's dataset context (the run's, with the class's
//! own seed and its model's tokenizer and chat template) and each class's request plan
//! (the run's request settings with the class's output length and model).

use std::collections::BTreeMap;
use std::path::Path;

use super::WorkloadError;
use crate::dataset::DatasetContext;
use crate::metrics::{names, RunSummary};
use crate::planner::{run::served_name, RunSpec};
use crate::record::facts::MixClassFacts;
use crate::request::RequestPlan;
use crate::tokenize::TokenizerCache;

/// The seed of class `c`'s prompts: the run's request-set seed moved by the class, so no
/// two classes share a prompt stream (and runs that differ only by endpoint still send
/// byte-identical requests).
fn class_seed(seed: u64, c: usize) -> u64 {
    seed ^ (c as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Each class's dataset context (empty for a run that is not a mix).
pub(crate) fn class_contexts(
    run: &RunSpec,
    base_dir: &Path,
    cache: &TokenizerCache,
    ctx: &DatasetContext,
) -> Result<Vec<DatasetContext>, WorkloadError> {
    let Some(classes) = &run.settings.mix else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(classes.len());
    for (c, class) in classes.iter().enumerate() {
        let mut one = DatasetContext {
            seed: class_seed(ctx.seed, c),
            classes: Vec::new(),
            ..ctx.clone()
        };
        if let Some(model) = &class.model {
            one.chat_template = model.spec.chat_template;
            one.tokenizer = match model.spec.tokenizer.as_deref() {
                None => None,
                Some(path) => Some(cache.load(&base_dir.join(path)).map_err(|source| {
                    WorkloadError::Tokenizer {
                        model: model.name.clone(),
                        source,
                    }
                })?),
            };
        }
        out.push(one);
    }
    Ok(out)
}

/// Each class's request plan, in the mix's order (empty for a run that is not a mix).
pub(crate) fn class_requests(run: &RunSpec) -> Vec<RequestPlan> {
    let Some(classes) = &run.settings.mix else {
        return Vec::new();
    };
    classes
        .iter()
        .map(|class| {
            let model = class.model.as_ref().unwrap_or(&run.settings.model);
            let mut request = run.settings.request.clone();
            if class.output_tokens.is_some() {
                request.output_tokens = class.output_tokens;
            }
            RequestPlan::resolve(&request, run.settings.api, served_name(model))
        })
        .collect()
}

/// The metrics stored with a run: the run's own, and for a mix each class's known ones
/// as `NAME@CLASS` (`names::class_metric`), which gates and reports read by that name.
pub fn stored_metrics(
    run: &RunSpec,
    summary: &RunSummary,
    classes: &[RunSummary],
) -> BTreeMap<String, Option<f64>> {
    let mut out = summary.values.clone();
    let Some(mix) = &run.settings.mix else {
        return out;
    };
    for (class, s) in mix.iter().zip(classes) {
        for (name, value) in &s.values {
            if value.is_some() {
                out.insert(names::class_metric(name, &class.name), *value);
            }
        }
    }
    out
}

/// A mix's classes as kept in the run's facts (`mix`): each class's name, dataset,
/// model (when its own), weight, planned share and measured requests.
pub fn facts(run: &RunSpec, classes: &[RunSummary]) -> Option<Vec<MixClassFacts>> {
    let mix = run.settings.mix.as_ref()?;
    let total: f64 = mix.iter().map(|c| c.weight).sum();
    let list = mix
        .iter()
        .enumerate()
        .map(|(c, class)| MixClassFacts {
            name: class.name.clone(),
            dataset: class.dataset.name.clone(),
            model: class.model.as_ref().map(|m| m.name.clone()),
            weight: class.weight,
            planned_share: class.weight / total,
            requests: classes.get(c).map_or(0, |s| s.requests),
        })
        .collect();
    Some(list)
}

/// A class the run measured no request of: its metrics (and gates) are unknown, which a
/// person should hear about with the run, not only at a failed gate.
pub fn warnings(run: &RunSpec, classes: &[RunSummary]) -> Vec<String> {
    let Some(mix) = &run.settings.mix else {
        return Vec::new();
    };
    let measured: u64 = classes.iter().map(|s| s.requests).sum();
    let total: f64 = mix.iter().map(|c| c.weight).sum();
    mix.iter()
        .zip(classes)
        .filter(|(_, s)| s.requests == 0)
        .map(|(class, _)| {
            format!(
                "mix class `{}` (weight {} of {total}) was drawn for none of the run's {measured} \
                 measured requests: its metrics and gates are unknown; give it more weight or \
                 the run more requests",
                class.name, class.weight
            )
        })
        .collect()
}
