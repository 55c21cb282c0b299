//! A mix's classes resolved for one run: each class's dataset and model found by name
//! and checked as a run of its own would be (its keys, its API, its tokenizer), its
//! typed dataset settings made, and the class as it goes into the run's settings (so a
//! class's dataset, model or output length is part of the run's id). Problems are
//! located at the class in `[datasets.NAME].mix`.

use serde::{Deserialize, Serialize};

use super::matrix::Point;
use super::resolve::Resolver;
use super::run::Named;
use crate::plan::diag::{suggest, Diagnostic, Span};
use crate::plan::mix_spec::{self, MixClassSpec};
use crate::plan::node::Step;
use crate::plan::{
    ApiSpec, DatasetKind, DatasetPlan, DatasetSpec, MixClassPlan, MixPlan, ModelSpec, TokenRange,
};

/// One class of a run's mix, as stored in its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixClass {
    pub name: String,
    pub weight: f64,
    pub dataset: Named<DatasetSpec>,
    /// The class's own model, when it names one (else the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Named<ModelSpec>>,
    /// The class's own output limit, when it sets one (else the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<TokenRange>,
}

/// Kinds a class may not be: their own clocks or conversations time them, and a mix
/// inside a mix has no meaning. The batch kinds (embeddings, rerank) are one workload
/// per API, not classes of a generation mix.
fn refused(kind: DatasetKind) -> Option<&'static str> {
    match kind {
        DatasetKind::Mix => Some("a mix cannot hold a mix"),
        DatasetKind::Trace => Some("a trace replays its own schedule"),
        DatasetKind::RandomMultiTurn | DatasetKind::Conversations | DatasetKind::ToolCalls => {
            Some("a conversation's turns are sent in order, not drawn one by one")
        }
        DatasetKind::RandomEmbedding
        | DatasetKind::Embedding
        | DatasetKind::RandomRerank
        | DatasetKind::Rerank => Some("embeddings and rerank datasets are runs of their own API"),
        _ => None,
    }
}

/// What a run's mix needs from the run: its API, whether it sends token ids, its model.
pub(super) struct MixRun<'a> {
    pub dataset: &'a str,
    pub api: ApiSpec,
    pub tokenize_prompt: bool,
    pub model: &'a Named<ModelSpec>,
}

impl Resolver<'_> {
    fn class_at(&self, dataset: &str, i: Option<usize>, key: Option<&str>) -> Span {
        let mut path = vec![
            Step::Key("datasets".into()),
            Step::Key(dataset.into()),
            Step::Key("mix".into()),
        ];
        if let Some(i) = i {
            path.push(Step::Index(i));
        }
        if let Some(key) = key {
            path.push(Step::Key(key.into()));
        }
        self.plan.locate(&path)
    }

    /// The run's typed dataset settings, and a mix's classes resolved (`None` for any
    /// other kind). Settings that make no typed plan were reported before (missing or
    /// misplaced keys).
    pub(super) fn typed_dataset(
        &self,
        run: &MixRun<'_>,
        spec: &DatasetSpec,
        point: &Point,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<(Option<Vec<MixClass>>, DatasetPlan)> {
        let typed = DatasetPlan::from_spec(spec).ok()?;
        if spec.kind != DatasetKind::Mix {
            return Some((None, typed));
        }
        let (classes, plan) = self.mix(run, spec, point, diags)?;
        Some((Some(classes), plan))
    }

    /// The classes of the run's mix (`spec`), resolved; `None` after reporting a problem.
    fn mix(
        &self,
        run: &MixRun<'_>,
        spec: &DatasetSpec,
        point: &Point,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<(Vec<MixClass>, DatasetPlan)> {
        let written = spec.mix.as_deref().unwrap_or_default();
        let before = diags.len();
        let assign = spec.assign.unwrap_or_default();
        for (place, message) in mix_spec::problems(written, assign) {
            let at = self.class_at(run.dataset, place.map(|p| p.0), place.map(|p| p.1));
            diags.push(Diagnostic::error(
                format!("dataset `{}`: {message}", run.dataset),
                Some(at),
            ));
        }
        let mut classes = Vec::new();
        let mut plans = Vec::new();
        for (i, class) in written.iter().enumerate() {
            if let Some((settings, plan)) = self.class(run, i, class, point, diags) {
                classes.push(settings);
                plans.push(plan);
            }
        }
        if diags[before..].iter().any(Diagnostic::is_error) {
            return None;
        }
        Some((
            classes,
            DatasetPlan::Mix(MixPlan {
                classes: plans,
                assign,
            }),
        ))
    }

    /// The model a class names.
    fn class_model(
        &self,
        owner: &str,
        i: usize,
        name: &str,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<Named<ModelSpec>> {
        let models = &self.plan.spec.models;
        if let Some(m) = models.get(name) {
            return Some(Named {
                name: name.to_string(),
                spec: m.clone(),
            });
        }
        let names: Vec<&str> = models.keys().map(String::as_str).collect();
        diags.push(self.unknown(owner, i, ("model", name), names));
        None
    }

    /// `name` is not a defined `what` (a dataset or model), with did-you-mean.
    fn unknown(
        &self,
        owner: &str,
        i: usize,
        (what, name): (&str, &str),
        names: Vec<&str>,
    ) -> Diagnostic {
        let mut d = Diagnostic::error(
            format!(
                "dataset `{owner}`, class {}: `{name}` is not a defined {what} ([{what}s.{name}] is missing)",
                i + 1
            ),
            Some(self.class_at(owner, Some(i), Some(what))),
        );
        if let Some(s) = suggest(name, names) {
            d = d.with_help(format!("did you mean `{s}`?"));
        }
        d
    }

    fn class(
        &self,
        run: &MixRun<'_>,
        i: usize,
        class: &MixClassSpec,
        point: &Point,
        diags: &mut Vec<Diagnostic>,
    ) -> Option<(MixClass, MixClassPlan)> {
        let spec = &self.plan.spec;
        let owner = run.dataset;
        let Some(dataset) = spec.datasets.get(&class.dataset) else {
            let names = spec.datasets.keys().map(String::as_str).collect();
            diags.push(self.unknown(owner, i, ("dataset", &class.dataset), names));
            return None;
        };
        if let Some(why) = refused(dataset.kind) {
            diags.push(Diagnostic::error(
                format!(
                    "dataset `{owner}`, class {}: dataset `{}` is of kind `{}`, which cannot be a class of a mix ({why})",
                    i + 1,
                    class.dataset,
                    crate::plan::dataset_plan::kind_name(dataset.kind)
                ),
                Some(self.class_at(owner, Some(i), Some("dataset"))),
            ));
            return None;
        }
        let model = match &class.model {
            None => None,
            Some(name) => Some(self.class_model(owner, i, name, diags)?),
        };
        let uses = model.as_ref().unwrap_or(run.model);
        self.check_tokenizer(&uses.name, &uses.spec, dataset, run.tokenize_prompt, diags);
        super::request_checks::check_dataset_api(self.plan, point, run.api, dataset.kind, diags);
        // The class's own table is checked where it is defined (`dataset_problems` of
        // every dataset); the matrix's dataset axes do not reach a mix's classes, so a
        // key the table leaves to an axis is missing here.
        let typed = match DatasetPlan::from_spec(dataset) {
            Ok(typed) => typed,
            Err(e) => {
                diags.push(
                    Diagnostic::error(
                        format!("dataset `{owner}`, class {}: dataset `{}`: {e}", i + 1, class.dataset),
                        Some(self.class_at(owner, Some(i), Some("dataset"))),
                    )
                    .with_help("a class's dataset is used as its table says: the matrix's dataset axes (input_tokens, …) do not apply to a mix's classes; set the key in the table"),
                );
                return None;
            }
        };
        let name = class.label().to_string();
        let settings = MixClass {
            name: name.clone(),
            // Round robin: every class one turn in each cycle (a planned share of 1/n).
            weight: class.weight.unwrap_or(1.0),
            dataset: Named {
                name: class.dataset.clone(),
                spec: dataset.clone(),
            },
            model,
            output_tokens: class.output_tokens,
        };
        let plan = MixClassPlan {
            name,
            // Round robin: every class one turn in each cycle (a planned share of 1/n).
            weight: class.weight.unwrap_or(1.0),
            dataset: typed,
        };
        Some((settings, plan))
    }
}
