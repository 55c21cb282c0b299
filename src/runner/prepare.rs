//! A run's requests, ready to send: the dataset materialized for the run's seed, each
//! prompt turned into a body by `api`, warmup first, and for warm runs the priming pass
//! (the measured set, sent once unmeasured).

use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::RunnerError;
use crate::api::{self, ApiKind, BodyInput};
use crate::dataset::{self, DatasetContext, Materialized};
use crate::engine::{Phase, PreparedRequest};
use crate::plan::CacheState;
use crate::planner::{warmup_count, RunSpec};
use crate::request::fields;
use crate::request::template::{self, TemplateInput};
use crate::tokenize::{Tokenizer, TokenizerCache};

/// Most requests materialized for a load bounded only by its duration.
const DURATION_ONLY_CAP: usize = 20_000;

/// Everything a run sends, and what the dataset reported.
#[derive(Debug)]
pub struct PreparedRun {
    /// Warmup requests, then measured ones.
    pub requests: Vec<PreparedRequest>,
    /// The warm-run priming pass (empty for cold runs).
    pub priming: Vec<PreparedRequest>,
    /// Target input length of each item (by `item`).
    pub targets: Vec<Option<u32>>,
    pub warnings: Vec<String>,
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Trace replay: the intended send offset of each request (`Load::Scheduled`).
    pub schedule: Option<Vec<std::time::Duration>>,
    /// Multi-turn: turns are built during the run from the answers (`requests` stays empty).
    pub conversation: Option<super::conversation::ConversationPlan>,
    /// Trace replay: each record's recorded `request_id`, by item (empty otherwise).
    pub trace_ids: Vec<Option<String>>,
}

pub use crate::request::api_kind;

/// How many measured requests a load asks for.
pub fn measured_count(run: &RunSpec) -> usize {
    let load = &run.settings.load;
    match (load.requests, load.rate, load.duration) {
        (Some(n), _, _) => n as usize,
        (None, Some(rate), Some(d)) => {
            ((rate * d.0.as_secs_f64() * 1.2).ceil() as usize + 16).min(DURATION_ONLY_CAP)
        }
        _ => DURATION_ONLY_CAP,
    }
}

/// Loads the model's tokenizer (once per suite through the cache), if the plan names one.
pub fn tokenizer(
    run: &RunSpec,
    base_dir: &Path,
    cache: &TokenizerCache,
) -> Result<Option<Arc<Tokenizer>>, RunnerError> {
    let Some(path) = run.settings.model.spec.tokenizer.as_deref() else {
        return Ok(None);
    };
    let full = base_dir.join(path);
    cache
        .load(&full)
        .map(Some)
        .map_err(|source| RunnerError::Tokenizer {
            model: run.settings.model.name.clone(),
            source,
        })
}

/// Builds the run's request set.
pub fn prepare(
    run: &RunSpec,
    base_dir: &Path,
    cache: &TokenizerCache,
) -> Result<PreparedRun, RunnerError> {
    let s = &run.settings;
    let tokenizer = tokenizer(run, base_dir, cache)?;
    let kind = api_kind(s.api);
    let warmup = warmup_count(&s.load) as usize;
    let measured = measured_count(run);
    let ctx = DatasetContext {
        base_dir: base_dir.to_path_buf(),
        tokenizer: tokenizer.clone(),
        chat: matches!(kind, ApiKind::Chat | ApiKind::Responses),
        tokenize_prompt: s.tokenize_prompt,
        chat_template: s.model.spec.chat_template,
        seed: run.dataset_seed,
        count: warmup + measured,
        template_kwargs: s
            .request
            .extra
            .get("chat_template_kwargs")
            .and_then(serde_json::Value::as_object)
            .cloned()
            .unwrap_or_default(),
    };
    let empty = |warnings| PreparedRun {
        requests: Vec::new(),
        priming: Vec::new(),
        targets: Vec::new(),
        warnings,
        tokenizer: tokenizer.clone(),
        schedule: None,
        conversation: None,
        trace_ids: Vec::new(),
    };
    if let Some(special) = super::traffic::prepare(run, &ctx, empty)? {
        return Ok(special);
    }
    let Materialized {
        items,
        mut warnings,
        stats,
    } = dataset::materialize(&s.dataset.spec, &ctx).map_err(|source| RunnerError::Dataset {
        dataset: s.dataset.name.clone(),
        source,
    })?;
    if stats.missed_target > 0 {
        warnings.push(format!(
            "{} of {} prompts missed their target length (by at most {} tokens)",
            stats.missed_target, stats.targeted, stats.max_abs_miss
        ));
    }
    let base = fields::base_fields(&s.request);
    let limit_field = fields::max_tokens_field(&s.request, kind);
    let stream = fields::streams(&s.request) && kind.can_stream();
    let mut rng = ChaCha8Rng::seed_from_u64(run.dataset_seed ^ 0x6f75_7470_7574);
    let template = s
        .request
        .body_template
        .as_deref()
        .map(|t| template::load(t, base_dir))
        .transpose()?;
    let mut requests = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let mut fields = base.clone();
        if let Some(n) = fields::output_tokens(&s.request, item.output_tokens, &mut rng) {
            if !matches!(kind, ApiKind::Embeddings | ApiKind::Rerank) {
                fields.insert(limit_field.to_string(), n.into());
            }
        }
        let input = BodyInput {
            model: run.served_model(),
            prompt: &item.prompt,
            fields: &fields,
            stream,
            include_usage: stream,
            reject_fields: &s.endpoint.spec.reject_fields,
        };
        let (path, body) = match &template {
            None => api::build_body(kind, &input)
                .map_err(|source| RunnerError::Body { item: i, source })?,
            Some(env) => {
                let t = TemplateInput {
                    model: input.model,
                    prompt: input.prompt,
                    fields: input.fields,
                    stream,
                    reject_fields: input.reject_fields,
                };
                (kind.path(), template::render(env, &t)?)
            }
        };
        let phase = if i < warmup {
            Phase::Warmup
        } else {
            Phase::Measured
        };
        requests.push(PreparedRequest {
            item: i as u64,
            phase,
            kind,
            path: path.into(),
            body,
            stream,
            client_input_tokens: item.client_input_tokens,
            headers: Vec::new(),
        });
    }
    let priming = match s.cache_state {
        CacheState::Cold => Vec::new(),
        CacheState::Warm => requests[warmup.min(requests.len())..]
            .iter()
            .map(|r| PreparedRequest {
                phase: Phase::Priming,
                ..r.clone()
            })
            .collect(),
    };
    let targets = items.iter().map(|i| i.target_input_tokens).collect();
    let schedule = poisson_schedule(&s.load, requests.len(), run.dataset_seed);
    if let Some(offsets) = &schedule {
        // A duration-bound load sends rate × duration requests: the rest are never due.
        requests.truncate(offsets.len());
    }
    Ok(PreparedRun {
        requests,
        priming,
        targets,
        warnings,
        tokenizer,
        schedule,
        conversation: None,
        trace_ids: Vec::new(),
    })
}

/// The send times of a Poisson load with a request count: N arrivals (N = `requests`, or
/// rate × `duration` when that is fewer), the first at 0, N − 1 gaps between them.
///
/// Each gap is exponentially distributed, as in any Poisson process, but the set of gaps
/// is balanced: gap k is drawn from the k-th of N − 1 equal-probability slices of the
/// exponential distribution (stratified sampling), and the gaps are then shuffled. So the
/// sample looks like its distribution — coefficient of variation 0.99–1.03 for 98% of
/// seeds with 1,000 gaps, where independent draws scatter by ±0.045 — and the gaps
/// are scaled to sum to (N − 1) / rate, so the achieved rate is the plan's. Two runs of a
/// plan then differ by the server, not by the luck of their arrival samples. Seeded. Only
/// for Poisson loads with a request count; gamma and constant arrivals keep their clock.
pub fn poisson_schedule(
    load: &crate::plan::LoadSpec,
    n: usize,
    seed: u64,
) -> Option<Vec<std::time::Duration>> {
    use rand::Rng;
    let rate = load.rate.filter(|r| r.is_finite() && *r > 0.0)?;
    let poisson = load.arrivals.unwrap_or_default() == crate::plan::Arrivals::Poisson;
    if !poisson || load.requests.is_none() || n == 0 {
        return None;
    }
    let n = match load.duration {
        Some(d) => n.min((rate * d.0.as_secs_f64()).round().max(1.0) as usize),
        None => n,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x706f_6973_736f_6e00);
    let slices = n - 1;
    let mut gaps: Vec<f64> = (0..slices)
        .map(|k| -(1.0 - (k as f64 + rng.gen::<f64>()) / slices as f64).ln())
        .collect();
    for k in (1..gaps.len()).rev() {
        gaps.swap(k, rng.gen_range(0..=k));
    }
    let scale = (slices as f64 / rate) / gaps.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let mut at = 0.0;
    let mut times = Vec::with_capacity(n);
    times.push(std::time::Duration::ZERO);
    for g in gaps {
        at += g * scale;
        times.push(crate::units::duration_from_secs(at));
    }
    Some(times)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::LoadSpec;

    #[test]
    fn poisson_schedule_meets_the_rate_with_exponential_gaps() {
        let load = LoadSpec {
            rate: Some(50.0),
            requests: Some(1000),
            ..LoadSpec::default()
        };
        for seed in [1, 2, 3, 42, 7, 1000] {
            let t = poisson_schedule(&load, 1000, seed).unwrap();
            let span = t.last().unwrap().as_secs_f64();
            let rate = 999.0 / span;
            assert!((rate - 50.0).abs() / 50.0 < 1e-6, "rate {rate}");
            let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
            let cv = var.sqrt() / mean;
            assert!((0.97..1.03).contains(&cv), "cv {cv}");
            let median = {
                let mut g = gaps.clone();
                g.sort_by(f64::total_cmp);
                g[g.len() / 2]
            };
            // An exponential's median is ln 2 / rate.
            assert!(
                (median * 50.0 - std::f64::consts::LN_2).abs() < 0.01,
                "median {median}"
            );
        }
        let constant = LoadSpec {
            arrivals: Some(crate::plan::Arrivals::Constant),
            ..load
        };
        assert!(poisson_schedule(&constant, 1000, 1).is_none());
    }
}
