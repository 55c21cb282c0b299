//! Request settings a run's API cannot honour as written, or that change what its
//! metrics mean: diagnostics at the key that set them (the matrix axis when a run's point
//! sets it, else `[defaults]`). Pure: settings in, diagnostics out.

use super::matrix::Point;
use crate::plan::diag::{Diagnostic, Span};
use crate::plan::node::{Node, NodeKind, Step};
use crate::plan::{ApiSpec, DatasetKind, LoadedPlan, RequestSpec};
use crate::request::template;

/// Where request key `key` of a run was set.
fn place(plan: &LoadedPlan, point: &Point, key: &str) -> Span {
    let section = if point.contains_key(key) {
        "matrix"
    } else {
        "defaults"
    };
    plan.locate(&[Step::Key(section.into()), Step::Key(key.into())])
}

/// Diagnostics of one run's request settings under its API.
pub(crate) fn check(
    plan: &LoadedPlan,
    point: &Point,
    api: ApiSpec,
    request: &RequestSpec,
    diags: &mut Vec<Diagnostic>,
) {
    let warn = |key: &str, message: String, help: &str| {
        Diagnostic::warning(message, Some(place(plan, point, key))).with_help(help.to_string())
    };
    if let Some(out) = request.output_tokens {
        if out.min() > out.max() {
            diags.push(Diagnostic::error(
                format!("output_tokens min {} is above max {}", out.min(), out.max()),
                Some(place(plan, point, "output_tokens")),
            ));
        }
        if let Some(least) = request.min_tokens.filter(|&m| m > out.min()) {
            diags.push(
                Diagnostic::error(
                    format!(
                        "min_tokens ({least}) is above output_tokens ({}): servers refuse a \
                         minimum above the limit",
                        out.min()
                    ),
                    Some(place(plan, point, "min_tokens")),
                )
                .with_help("min_tokens must be at most the smallest output_tokens"),
            );
        }
    }
    if request.continuous_usage == Some(true) {
        let why = if request.stream == Some(false) {
            Some("`continuous_usage` needs a stream: `stream = false` here (servers answer `stream_options` without `stream` with HTTP 400)")
        } else if !matches!(api, ApiSpec::Chat | ApiSpec::Completions) {
            Some("`continuous_usage` applies to api = \"chat\" and \"completions\" only")
        } else {
            None
        };
        if let Some(why) = why {
            diags.push(
                Diagnostic::error(why, Some(place(plan, point, "continuous_usage")))
                    .with_help("set `continuous_usage` only on streamed chat or completions runs"),
            );
        }
    }
    if api == ApiSpec::Responses {
        if request.max_completion_tokens == Some(true) {
            diags.push(warn(
                "max_completion_tokens",
                "`max_completion_tokens` does not apply to api = \"responses\"".into(),
                "the Responses API's output limit is always sent as `max_output_tokens`",
            ));
        }
        if request.min_tokens.is_some() {
            diags.push(warn(
                "min_tokens",
                "`min_tokens` is not a field of the Responses API: servers ignore it (vLLM) or reject it (OpenAI)".into(),
                "use `ignore_eos = true` with `output_tokens` for exact output lengths",
            ));
        }
        if request.n.is_some_and(|n| n > 1) {
            diags.push(warn(
                "n",
                "`n` is not a field of the Responses API: servers ignore it (vLLM) or reject it (OpenAI)".into(),
                "use api = \"chat\" or \"completions\" for several choices per request",
            ));
        }
    } else if let Some(n) = request.n.filter(|&n| n > 1) {
        diags.push(warn(
            "n",
            format!("`n = {n}`: TTFT and inter-token times follow choice 0 only, while output tokens and throughput count all {n} choices"),
            "per-token latency of one stream is the figure to compare; use n = 1 for EvalScope-comparable TPOT",
        ));
    }
}

/// `body_template` against a run: it does not apply to a trace replay (records are sent
/// as recorded); otherwise it must read, compile and render to JSON with the run's fields
/// (a sample prompt), located at the key, before any run starts.
pub(crate) fn check_template(
    plan: &LoadedPlan,
    api: ApiSpec,
    request: &RequestSpec,
    kind: DatasetKind,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(value) = request.body_template.as_deref() else {
        return;
    };
    let at = Some(plan.locate(&[
        Step::Key("defaults".into()),
        Step::Key("body_template".into()),
    ]));
    if kind == DatasetKind::Trace {
        diags.push(Diagnostic::warning(
            "`body_template` does not apply to a trace replay: its records are sent as recorded",
            at,
        ));
        return;
    }
    // The fields the run's requests send, with the largest output limit it asks for.
    let resolved = crate::request::RequestPlan::resolve(request, api, "");
    let mut fields = resolved.fields;
    if let Some(n) = resolved.output.upper() {
        fields.insert(resolved.limit_field.into(), n.into());
    }
    if let Err(reason) = template::trial(value, &plan.base_dir, &fields) {
        diags.push(
            Diagnostic::error(format!("`body_template` cannot make a request body: {reason}"), at)
                .with_help("the template must render to JSON; its context holds model, prompt, messages, stream and every request field by its OpenAI name"),
        );
    }
}

/// Multi-turn datasets build chat conversations: another API is an error before any run
/// starts (it used to fail only when the run did).
pub(crate) fn check_dataset_api(
    plan: &LoadedPlan,
    point: &Point,
    api: ApiSpec,
    kind: DatasetKind,
    diags: &mut Vec<Diagnostic>,
) {
    let multi_turn = matches!(
        kind,
        DatasetKind::RandomMultiTurn | DatasetKind::Conversations
    );
    let tools = kind == DatasetKind::ToolCalls;
    let refused = (multi_turn && api != ApiSpec::Chat)
        || (tools && !matches!(api, ApiSpec::Chat | ApiSpec::Responses));
    if refused {
        let name = crate::request::api_kind(api).as_str();
        let need = match tools {
            true => "tool_calls datasets need api = \"chat\" or \"responses\"",
            false => "multi-turn datasets need api = \"chat\"",
        };
        diags.push(
            Diagnostic::error(
                format!("{need} (this run uses `{name}`)"),
                Some(place(plan, point, "api")),
            )
            .with_help("set api = \"chat\", or exclude this combination in [matrix]"),
        );
    }
}

/// Whether a table holds a list anywhere.
fn holds_list(node: &Node) -> bool {
    match &node.kind {
        NodeKind::Seq(_) => true,
        NodeKind::Map(entries) => entries.iter().any(|e| holds_list(&e.value)),
        _ => false,
    }
}

/// Plan-wide checks of the matrix's request axes: a single `extra` table holding a list is
/// most likely `extra.key = [a, b]` (TOML's dotted key), which is one run sending the list.
pub(crate) fn check_plan(plan: &LoadedPlan, diags: &mut Vec<Diagnostic>) {
    let Some(extra) = plan.tree.get("matrix").and_then(|m| m.get("extra")) else {
        return;
    };
    if matches!(extra.kind, NodeKind::Map(_)) && holds_list(extra) {
        diags.push(
            Diagnostic::warning(
                "`extra` in [matrix] is a single table: one run, which sends the list in it as the field's value",
                Some(plan.locate(&[Step::Key("matrix".into()), Step::Key("extra".into())])),
            )
            .with_help("for one run per value write a list of tables: extra = [{ priority = 0 }, { priority = 10 }]"),
        );
    }
}
