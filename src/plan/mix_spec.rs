//! `kind = "mix"`: a dataset whose requests are drawn from weighted workload classes, each
//! a dataset of its own with, optionally, its own output length and model (a LoRA adapter
//! is a model the server serves by name). This module holds what the user wrote and the
//! checks that need only the mix itself; the planner resolves each class's dataset and
//! model by name (`planner::mix`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ranges;
use super::spec::TokenRange;
use crate::metrics::names::valid_class_name;

/// Most classes in one mix.
pub(crate) const MAX_MIX_CLASSES: usize = 64;

/// One workload class of a mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MixClassSpec {
    /// The dataset this class's prompts come from (a table of `[datasets]`, not a mix,
    /// trace or multi-turn kind).
    pub dataset: String,
    /// The class's share of the run's requests, relative to the other classes' weights
    /// (0.7 and 0.3, or 7 and 3). Needed by the weighted draw; not written under
    /// `assign = "round_robin"` (every class takes its turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.000001, max = 1000000))]
    pub weight: Option<f64>,
    /// The class's name in reports and gates (`ttft_p99@NAME`); default: its dataset's.
    /// Letters, digits, `_`, `-` and `.`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The class's output limit, instead of the run's `output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1, "maximum" = ranges::MAX_TOKENS))]
    pub output_tokens: Option<TokenRange>,
    /// The model (a table of `[models]`) this class's requests name, instead of the run's:
    /// another model the server serves, or a LoRA adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl MixClassSpec {
    /// The class's name: `name`, or its dataset's.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.dataset)
    }
}

/// How a mix's classes are given to its requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MixAssign {
    /// Each request's class a seeded draw by weight (the default).
    #[default]
    Weighted,
    /// The classes in the order written, request by request (request `i` takes class
    /// `i mod classes`, by the run's request index, so shards keep one global order): a
    /// mix of LoRA adapters then swaps adapter on every request.
    RoundRobin,
}

/// Where a problem of a mix stands: the class (its index) and the key at fault; `None`
/// for the mix as a whole.
pub(crate) type ClassKey = Option<(usize, &'static str)>;

/// Problems of a mix as written that need no other table: `(where, message)`.
pub fn problems(classes: &[MixClassSpec], assign: MixAssign) -> Vec<(ClassKey, String)> {
    let mut out = Vec::new();
    if classes.is_empty() {
        out.push((None, "a mix needs at least one class".to_string()));
    }
    if classes.len() > MAX_MIX_CLASSES {
        out.push((
            None,
            format!(
                "a mix has at most {MAX_MIX_CLASSES} classes; this one has {}",
                classes.len()
            ),
        ));
    }
    for (i, class) in classes.iter().enumerate() {
        match (assign, class.weight) {
            (MixAssign::Weighted, None) => out.push((
                Some((i, "dataset")),
                "a class of a weighted mix needs a `weight` (or set `assign = \"round_robin\"` on the mix)".to_string(),
            )),
            (MixAssign::Weighted, Some(w)) if !(w.is_finite() && w > 0.0) => out.push((
                Some((i, "weight")),
                format!("weight must be a positive number; {w} is not"),
            )),
            (MixAssign::RoundRobin, Some(_)) => out.push((
                Some((i, "weight")),
                "`assign = \"round_robin\"` gives every class its turn in order: a `weight` has no effect there (remove it, or draw by weight without `assign`)".to_string(),
            )),
            _ => {}
        }
        let name = class.label();
        // A name from the class's dataset is at fault at `dataset`.
        let at = Some((
            i,
            if class.name.is_some() {
                "name"
            } else {
                "dataset"
            },
        ));
        if !valid_class_name(name) {
            out.push((
                at,
                format!(
                    "class name `{name}` may hold only letters, digits, `_`, `-` and `.` (at \
                     most 64): set `name`"
                ),
            ));
        }
        if classes[..i].iter().any(|c| c.label() == name) {
            out.push((
                at,
                format!(
                    "two classes are named `{name}`: give each a distinct `name` (a class's \
                     metrics and gates are read by its name)"
                ),
            ));
        }
    }
    out
}
