//! Golden requests of the plan's `[checks]` mixed into a run's measured requests: the
//! golden set loaded (`dataset::golden`), each golden request's body built from the run's
//! request settings with the checks' own output limit and temperature (no `ignore_eos`,
//! no `min_tokens`: the model may stop when it has answered), and placed at seeded
//! positions among the measured requests, marked `Phase::Check`. A golden request's
//! `item` is `record::CHECK_ITEM_BASE` + its case's place in the golden set, so that the
//! same case is known in every run of the suite and shares nothing with a dataset item.

use std::path::Path;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::WorkloadError;
use crate::api::golden::GoldenCase;
use crate::api::{self, ApiKind, BodyInput};
use crate::engine::PreparedRequest;
use crate::planner::RunSpec;
use crate::record::{Phase, CHECK_ITEM_BASE};

/// Fields a golden request never sends: they force answers longer than the answer.
const DROPPED: [&str; 2] = ["ignore_eos", "min_tokens"];

/// Whether the run's API can offer tools (the golden set's tool call is left out if not).
fn offers_tools(kind: ApiKind) -> bool {
    matches!(kind, ApiKind::Chat | ApiKind::Responses)
}

/// The body of golden case `case` for `run`.
fn body(run: &RunSpec, case: &GoldenCase, item: u64) -> Result<PreparedRequest, WorkloadError> {
    let Some(checks) = &run.settings.checks else {
        unreachable!("golden requests are built only for a run with [checks]")
    };
    let req = &run.request;
    let mut fields = req.fields_with(Some(checks.output_tokens()));
    for key in DROPPED {
        fields.remove(key);
    }
    fields.insert("temperature".into(), checks.temperature().into());
    if let Some(tools) = case.tools.as_deref().filter(|_| offers_tools(req.api)) {
        fields.insert("tools".into(), tools.body_field(req.api));
    }
    let reject = &run.settings.endpoint.spec.reject_fields;
    let input = BodyInput {
        model: &req.model,
        prompt: &case.prompt,
        fields: &fields,
        stream: req.stream,
        include_usage: req.stream,
        continuous_usage: req.continuous_usage,
        reject_fields: reject,
    };
    let (path, body) = api::build_body(req.api, &input).map_err(|source| WorkloadError::Body {
        item: item as usize,
        source,
    })?;
    let (max_output_tokens, running_usage) = api::body_reads(&body);
    Ok(PreparedRequest {
        item,
        phase: Phase::Check,
        kind: req.api,
        path: path.into(),
        body,
        stream: req.stream,
        client_input_tokens: None,
        max_output_tokens,
        running_usage,
        headers: Vec::new(),
        session: None,
        class: None,
        cancel_after: None,
        tools: None,
        check: Some(Arc::new(case.clone())),
    })
}

/// The run's golden set (`None` for a run without `[checks]`).
pub(crate) fn set_of(
    run: &RunSpec,
    base_dir: &Path,
) -> Result<Option<Vec<Arc<GoldenCase>>>, WorkloadError> {
    let Some(checks) = &run.settings.checks else {
        return Ok(None);
    };
    let tools = offers_tools(run.request.api);
    crate::dataset::golden::golden_set(checks.path.as_deref(), base_dir, tools)
        .map(Some)
        .map_err(|errors| WorkloadError::Golden {
            first: errors
                .into_iter()
                .next()
                .map(|e| e.to_string())
                .unwrap_or_default(),
        })
}

/// Mixes the run's golden requests into `requests` (warmup first, then measured): as
/// many as `[checks]` asks for, cases in the set's order (cycled), each at a seeded
/// position among the measured requests. Returns how many were mixed in.
pub(crate) fn mix_in(
    run: &RunSpec,
    base_dir: &Path,
    requests: &mut Vec<PreparedRequest>,
    warmup: usize,
) -> Result<usize, WorkloadError> {
    let (Some(checks), Some(set)) = (&run.settings.checks, set_of(run, base_dir)?) else {
        return Ok(0);
    };
    let warmup = warmup.min(requests.len());
    let measured = requests.len() - warmup;
    let n = checks.count(measured);
    if n == 0 || set.is_empty() {
        return Ok(0);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(run.dataset_seed ^ 0x676f_6c64_656e);
    let mut at: Vec<usize> = (0..n).map(|_| rng.gen_range(0..=measured)).collect();
    at.sort_unstable();
    let tail = requests.split_off(warmup);
    let mut golden = at.into_iter().enumerate().peekable();
    for (i, r) in tail.into_iter().enumerate() {
        while let Some((k, _)) = golden.next_if(|(_, p)| *p <= i) {
            let case = k % set.len();
            requests.push(body(run, &set[case], CHECK_ITEM_BASE + case as u64)?);
        }
        requests.push(r);
    }
    for (k, _) in golden {
        let case = k % set.len();
        requests.push(body(run, &set[case], CHECK_ITEM_BASE + case as u64)?);
    }
    Ok(n)
}

/// The warning of a run whose requests are not built before it (a trace, a multi-turn
/// or tool-calling dataset, a load bounded only by its duration): no golden request is
/// mixed into it.
pub(crate) fn not_mixed(run: &RunSpec) -> Option<String> {
    run.settings.checks.as_ref().map(|_| {
        "[checks]: no golden requests in this run (they are mixed only into runs with a \
         request count whose requests are built before the run, not traces, \
         conversations or duration-only loads)"
            .to_string()
    })
}
