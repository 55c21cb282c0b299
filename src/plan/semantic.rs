//! Checks beyond the schema: impossible settings, keys that do not apply to a dataset's
//! kind, unknown metric names. Matrix references are checked by the planner, which
//! knows the runs.

use super::diag::{suggest, Diagnostic, Span};
use super::node::{Node, Step};
use super::spec::{DatasetSpec, InputLenMode, PlanSpec};
use crate::metrics::condition::parse_condition;
use crate::metrics::names;
use crate::metrics::slo::{Slo, SloError};

fn key(path: &[&str]) -> Vec<Step> {
    path.iter().map(|s| Step::Key(s.to_string())).collect()
}

/// Every semantic problem of a deserialized plan.
pub fn check(spec: &PlanSpec, tree: &Node) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for (section, empty) in [
        ("endpoints", spec.endpoints.is_empty()),
        ("models", spec.models.is_empty()),
        ("datasets", spec.datasets.is_empty()),
    ] {
        if empty {
            diags.push(
                Diagnostic::error(format!("the plan defines no {section}"), Some(tree.span))
                    .with_help(format!("add a [{section}.NAME] table")),
            );
        }
    }
    diags.extend(super::trust_spec::problems(&spec.trust, tree));
    diags.extend(super::checks_spec::problems(spec.checks.as_ref(), tree));
    diags.extend(super::capacity_checks::check(spec, tree));
    for (name, ep) in &spec.endpoints {
        let url = &ep.base_url;
        diags.extend(super::replicas::check(name, ep, tree));
        diags.extend(super::limits::check(name, &ep.limits, tree));
        if ep.sim.is_some() && !url.starts_with("sim://") {
            let at = tree.locate(&key(&["endpoints", name, "sim"]));
            diags.push(Diagnostic::error(
                format!("endpoint `{name}` has [sim] settings but its base_url is not sim://"),
                Some(at),
            ));
        }
        if ep.launch.is_none() {
            for (field, set) in [("ready", ep.ready.is_some()), ("stop", ep.stop.is_some())] {
                if set {
                    let at = tree.locate(&key(&["endpoints", name, field]));
                    diags.push(
                        Diagnostic::error(
                            format!("endpoint `{name}`: `{field}` has no effect without `launch`"),
                            Some(at),
                        )
                        .with_help(
                            "perfplan polls `ready` and runs `stop` only for a server it launches",
                        ),
                    );
                }
            }
        }
        diags.extend(telemetry_problems(name, ep.telemetry.as_ref(), tree));
        if let Some(Err(e)) = ep.sim.as_ref().map(|s| s.validate()) {
            // At the setting itself when it is written (`fault_*` names several: the table).
            let at = tree.locate(&key(&["endpoints", name, "sim", e.setting]));
            diags.push(Diagnostic::error(
                format!("endpoint `{name}`: {e}"),
                Some(at),
            ));
        }
    }
    // A key the matrix sets (an axis, or an include entry) is checked per run, resolved.
    let set_by_matrix = |key: &str| {
        spec.matrix.axes.iter().any(|(k, _)| k == key)
            || spec.matrix.include.iter().any(|m| m.contains_key(key))
    };
    for (name, ds) in &spec.datasets {
        for (field, message) in dataset_problems_given(ds, set_by_matrix) {
            let at = tree.locate(&key(&["datasets", name, &field]));
            diags.push(Diagnostic::error(
                format!("dataset `{name}`: {message}"),
                Some(at),
            ));
        }
    }
    check_metric_names(spec, tree, &mut diags);
    diags
}

/// Most extra telemetry URLs of one endpoint.
pub(crate) const MAX_TELEMETRY_URLS: usize = 16;

/// Each telemetry URL a server path or an http(s) URL, at most `MAX_TELEMETRY_URLS`, none twice.
fn telemetry_problems(
    name: &str,
    telemetry: Option<&super::TelemetrySpec>,
    tree: &Node,
) -> Vec<Diagnostic> {
    let Some(t) = telemetry else {
        return Vec::new();
    };
    let mut diags = Vec::new();
    let urls = key(&["endpoints", name, "telemetry", "urls"]);
    if t.urls.len() > MAX_TELEMETRY_URLS {
        diags.push(
            Diagnostic::error(
                format!(
                    "endpoint `{name}`: telemetry lists {} URLs, at most {MAX_TELEMETRY_URLS}",
                    t.urls.len()
                ),
                Some(tree.locate(&urls)),
            )
            .with_help("scrape fewer pages (each is scraped at every interval)"),
        );
    }
    for (i, url) in t.urls.iter().enumerate() {
        let mut at = urls.clone();
        at.push(Step::Index(i));
        let problem = match crate::control::urls::check_override(url) {
            Err(e) => Some(crate::control::chain(&e)),
            Ok(()) if t.urls[..i].contains(url) => Some(format!("`{url}` is listed twice")),
            Ok(()) => None,
        };
        if let Some(problem) = problem {
            diags.push(
                Diagnostic::error(
                    format!("endpoint `{name}`: telemetry URL: {problem}"),
                    Some(tree.locate(&at)),
                )
                .with_help(
                    "write a server path (\"/metrics\") or a full URL \
                     (\"http://gpu-host:9400/metrics\")",
                ),
            );
        }
    }
    diags
}

fn check_metric_names(spec: &PlanSpec, tree: &Node, diags: &mut Vec<Diagnostic>) {
    let all = names::all_names();
    let unknown = |diags: &mut Vec<Diagnostic>, section: &str, metric: &str, at: Vec<Step>| {
        if !names::is_metric_or_class(metric) && !metric.starts_with("sla_") {
            let mut d = Diagnostic::error(
                format!("unknown metric `{metric}` in [{section}]"),
                Some(tree.locate(&at)),
            );
            if let Some(s) = suggest(metric, all.iter().map(String::as_str)) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            diags.push(d);
        }
    };
    for (written, text) in &spec.gates {
        // A mix class's gate (`ttft_p99@rag`) is its metric's, for a class some mix has.
        let (metric, class) = names::split_class(written);
        unknown(diags, "gates", metric, key(&["gates", written]));
        if let Some(class) = class {
            let at = tree.locate(&key(&["gates", written]));
            diags.extend(unknown_class(spec, written, class, at));
        }
        let metric = written.as_str();
        if names::is_metric(names::split_class(metric).0) {
            if let Err(e) = parse_condition(metric, text) {
                let at = tree.value_span(&key(&["gates", metric]));
                diags.push(Diagnostic::error(format!("gate `{metric}`: {e}"), at));
            }
        }
    }
    for (i, metric) in spec.report.metrics.names().iter().enumerate() {
        let mut at = key(&["report", "metrics"]);
        at.push(Step::Index(i));
        if let (_, Some(class)) = names::split_class(metric) {
            diags.extend(unknown_class(spec, metric, class, tree.locate(&at)));
        }
        unknown(diags, "report", metric, at);
    }
    for (quantity, text) in &spec.slo {
        match Slo::parse(quantity, text) {
            Ok(_) => {}
            Err(e @ SloError::Unknown { .. }) => {
                let at = tree.locate(&key(&["slo", quantity]));
                diags.push(Diagnostic::error(e.to_string(), Some(at)).with_help(e.help()));
            }
            Err(e @ SloError::Condition(_)) => {
                let at = tree.value_span(&key(&["slo", quantity]));
                diags.push(Diagnostic::error(format!("slo `{quantity}`: {e}"), at));
            }
            Err(e) => {
                let at = tree.value_span(&key(&["slo", quantity]));
                diags.push(Diagnostic::error(e.to_string(), at).with_help(e.help()));
            }
        }
    }
}

/// A gate or report metric of class `class` of a mix that no mix of the plan has.
fn unknown_class(spec: &PlanSpec, gate: &str, class: &str, at: Span) -> Option<Diagnostic> {
    let classes: Vec<&str> = spec
        .datasets
        .values()
        .filter_map(|d| d.mix.as_deref())
        .flatten()
        .map(super::mix_spec::MixClassSpec::label)
        .collect();
    if classes.contains(&class) {
        return None;
    }
    let d = Diagnostic::error(
        format!(
            "`{gate}`: no mix in [datasets] has a class `{class}` (`METRIC@CLASS` is one class's \
             metric of a `kind = \"mix\"` dataset)"
        ),
        Some(at),
    );
    Some(match suggest(class, classes.iter().copied()) {
        Some(s) => d.with_help(format!("did you mean `@{s}`?")),
        None if classes.is_empty() => d.with_help("the plan has no mix: remove the `@` part"),
        None => d.with_help(format!("its classes are: {}", classes.join(", "))),
    })
}

/// Problems of one dataset (as written, or as resolved for a run): `(key, message)`.
pub(crate) fn dataset_problems(ds: &DatasetSpec) -> Vec<(String, String)> {
    dataset_problems_given(ds, |_| false)
}

/// `dataset_problems`, where a required key that `supplied` says comes from elsewhere
/// (a matrix axis) is not missing.
pub(crate) fn dataset_problems_given(
    ds: &DatasetSpec,
    supplied: impl Fn(&str) -> bool,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let json = serde_json::to_value(ds).unwrap_or_default();
    let allowed = super::dataset_keys::keys_for(ds.kind);
    let kind = super::dataset_plan::kind_name(ds.kind);
    if let Some(map) = json.as_object() {
        for k in map
            .keys()
            .filter(|k| *k != "kind" && !allowed.contains(&k.as_str()))
        {
            let field = k.clone();
            out.push((
                field,
                format!(
                    "`{k}` does not apply to kind `{kind}` (it uses: {})",
                    allowed.join(", ")
                ),
            ));
        }
    }
    out.extend(super::dataset_keys::idle_keys(ds, &supplied));
    // The required keys are the typed settings' (`DatasetPlan::from_spec`): one rule.
    for k in super::dataset_plan::missing_keys(ds) {
        if !supplied(k) {
            out.push(("kind".into(), format!("kind `{kind}` needs `{k}`")));
        }
    }
    out.extend(length_problems(ds));
    out.extend(super::prefix_groups::problems(ds, &supplied));
    out.extend(super::trace_checks::problems(ds));
    if ds.prefix_file.is_some() {
        if ds.target_input_len.is_none() && !supplied("target_input_len") {
            out.push((
                "prefix_file".into(),
                "`prefix_file` needs `target_input_len` (the length every request is filled to)"
                    .into(),
            ));
        }
        if ds.input_len_mode == Some(InputLenMode::Drop) {
            out.push((
                "input_len_mode".into(),
                "input_len_mode = \"drop\" keeps only prompts that already reach \
                 target_input_len, so `prefix_file` would never be used: use \"cap\" (the \
                 default), which fills shorter prompts from the prefix file"
                    .into(),
            ));
        }
    }
    out
}

/// Lengths that contradict each other, and images too large to make: `(key, message)`.
fn length_problems(ds: &DatasetSpec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(range) = ds.input_tokens {
        if range.min() > range.max() {
            out.push((
                "input_tokens".into(),
                format!(
                    "input_tokens min {} is above max {}",
                    range.min(),
                    range.max()
                ),
            ));
        }
        if let Some(prefix) = ds.prefix_tokens {
            if prefix >= range.min() {
                out.push((
                "prefix_tokens".into(),
                    format!("prefix_tokens ({prefix}) must be below input_tokens ({}): the prefix is part of the prompt", range.min()),
                ));
            }
        }
    }
    for (key, range) in [
        ("query_tokens", ds.query_tokens),
        ("text_tokens", ds.text_tokens),
        ("turns", ds.turns),
        ("user_tokens", ds.user_tokens),
        ("assistant_tokens", ds.assistant_tokens),
        ("tool_result_tokens", ds.tool_result_tokens),
    ] {
        if let Some(r) = range.filter(|r| r.min() > r.max()) {
            out.push((
                key.into(),
                format!("{key} min {} is above max {}", r.min(), r.max()),
            ));
        }
    }
    if let (Some(w), Some(h)) = (ds.width, ds.height) {
        if u64::from(w) * u64::from(h) > super::ranges::MAX_IMAGE_PIXELS {
            out.push((
                "width".into(),
                format!(
                    "image size {w}x{h} is more than {} megapixels",
                    super::ranges::MAX_IMAGE_PIXELS / 1_000_000
                ),
            ));
        }
    }
    if let (Some(min), Some(max)) = (ds.min_input_tokens, ds.max_input_tokens) {
        if min > max {
            out.push((
                "min_input_tokens".into(),
                format!("min_input_tokens {min} is above max_input_tokens {max}"),
            ));
        }
    }
    out
}

/// Matrix values naming endpoints, models or datasets that the plan does not define,
/// checked on the tree so they are reported together with schema errors.
pub(crate) fn check_refs(tree: &Node) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let Some(matrix) = tree.get("matrix") else {
        return diags;
    };
    for (axis, section) in [
        ("endpoint", "endpoints"),
        ("model", "models"),
        ("dataset", "datasets"),
    ] {
        let defined: Vec<&str> = tree
            .get(section)
            .and_then(Node::map)
            .map(|entries| entries.iter().map(|e| e.key.as_str()).collect())
            .unwrap_or_default();
        let mut values: Vec<&Node> = Vec::new();
        if let Some(v) = matrix.get(axis) {
            collect_strings(v, &mut values);
        }
        for list in ["include", "exclude"] {
            if let Some(super::node::NodeKind::Seq(items)) = matrix.get(list).map(|n| &n.kind) {
                for item in items {
                    if let Some(v) = item.get(axis) {
                        collect_strings(v, &mut values);
                    }
                }
            }
        }
        for v in values {
            let super::node::NodeKind::Str(name) = &v.kind else {
                continue;
            };
            if !defined.contains(&name.as_str()) {
                let mut d = Diagnostic::error(
                    format!("`{name}` is not a defined {axis} ([{section}.{name}] is missing)"),
                    Some(v.span),
                )
                .with_label(format!("no such {axis}"));
                if let Some(s) = suggest(name, defined.iter().copied()) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                diags.push(d);
            }
        }
    }
    diags
}

fn collect_strings<'a>(node: &'a Node, out: &mut Vec<&'a Node>) {
    match &node.kind {
        super::node::NodeKind::Seq(items) => out.extend(items.iter()),
        _ => out.push(node),
    }
}

/// Files the plan names (tokenizers, dataset files, `@file` prompts) that do not exist,
/// reported before any run starts. Paths are relative to the plan's folder.
pub(crate) fn check_files(
    spec: &PlanSpec,
    tree: &Node,
    base_dir: &std::path::Path,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let mut missing = |path: &str, at: Vec<Step>, what: &str| {
        let full = base_dir.join(path);
        if !full.exists() {
            let span = tree.value_span(&at).or_else(|| Some(tree.locate(&at)));
            diags.push(
                Diagnostic::error(
                    format!(
                        "{what} `{path}` does not exist (looked at {})",
                        full.display()
                    ),
                    span,
                )
                .with_help("paths are relative to the plan file's folder"),
            );
        }
    };
    for (name, model) in &spec.models {
        if let Some(t) = &model.tokenizer {
            missing(t, key(&["models", name, "tokenizer"]), "tokenizer");
        }
    }
    for (name, ds) in &spec.datasets {
        for (field, value) in [("path", &ds.path), ("prefix_file", &ds.prefix_file)] {
            if let Some(p) = value {
                missing(p, key(&["datasets", name, field]), "dataset file");
            }
        }
        if let Some(file) = ds.text.as_deref().and_then(|t| t.strip_prefix('@')) {
            missing(file, key(&["datasets", name, "text"]), "prompt file");
        }
    }
    if let Some(file) = spec
        .defaults
        .body_template
        .as_deref()
        .and_then(|t| t.strip_prefix('@'))
    {
        missing(file, key(&["defaults", "body_template"]), "template file");
    }
    if let Some(p) = spec.checks.as_ref().and_then(|c| c.path.as_deref()) {
        missing(p, key(&["checks", "path"]), "golden file");
    }
    for (name, ep) in &spec.endpoints {
        if let Some(t) = ep.sim.as_ref().and_then(|s| s.tokenizer.as_deref()) {
            missing(
                t,
                key(&["endpoints", name, "sim", "tokenizer"]),
                "simulator tokenizer",
            );
        }
    }
    diags
}
