//! `RunSpec`: one fully resolved run, with its ordinal and stable id, and what the
//! planner works out once from its settings: the load (`RunLoad`), the dataset's settings
//! typed per kind (`DatasetPlan`) and the resolved request fields (`RequestPlan`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::load::RunLoad;
use crate::plan::{
    ApiSpec, CacheState, DatasetPlan, DatasetSpec, EndpointSpec, LoadSpec, ModelSpec, RequestSpec,
};
use crate::request::RequestPlan;

/// Everything that determines what a run sends. Its canonical JSON is hashed into the id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub endpoint: Named<EndpointSpec>,
    pub model: Named<ModelSpec>,
    pub dataset: Named<DatasetSpec>,
    pub request: RequestSpec,
    pub api: ApiSpec,
    pub cache_state: CacheState,
    pub tokenize_prompt: bool,
    pub load: LoadSpec,
    /// The plan's seed.
    pub seed: u64,
    /// Which repeat of a `repeat = N` load this run is (none for a load run once). Left
    /// out of the JSON when none, so a run without repeats keeps its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<RepeatOf>,
    /// A mix's classes, each with its dataset and model as resolved (none for any other
    /// dataset, and left out of the JSON then, so other runs keep their ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Vec<super::mix::MixClass>>,
    /// The plan's `[checks]` (golden requests); left out of the JSON when absent, so
    /// runs of plans without it keep their ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<crate::plan::ChecksSpec>,
}

/// A run's place among the repeats of its load: its group's id (the id the run would
/// have without `repeat`), its number `k` (1-based) and the group's size `of`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepeatOf {
    pub group: String,
    pub k: u32,
    pub of: u32,
}

/// A named part of a run: the table name in the plan and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Named<T> {
    pub name: String,
    #[serde(flatten)]
    pub spec: T,
}

/// One run of a suite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSpec {
    /// 1-based position in the suite.
    pub ordinal: usize,
    /// Short hash of the canonical JSON of `settings`: the same on every machine.
    pub id: String,
    /// The run's axis values (matrix order, then keys added by `include`).
    pub axes: Map<String, Value>,
    pub settings: RunSettings,
    /// Seed of the run's request set: identical for runs that differ only by endpoint.
    pub dataset_seed: u64,
    /// The dataset's settings typed for its kind, every default resolved (from
    /// `settings.dataset`, which stays as written: its JSON is part of the id).
    #[serde(skip)]
    pub dataset: DatasetPlan,
    /// What every request sends (from `settings.request`, `settings.api` and the model).
    #[serde(skip)]
    pub request: RequestPlan,
    /// How the run sends its requests, typed once from `settings.load` (which stays as
    /// written: its JSON is part of the id); a shard's part of it under `--shard`.
    #[serde(skip)]
    pub load: RunLoad,
}

impl RunSpec {
    /// The model name sent in requests.
    pub(crate) fn served_model(&self) -> &str {
        &self.request.model
    }

    /// Every model name the run's requests carry, for the connection test to find on the
    /// server: its model's, and each mix class's own; a trace's records keep their own
    /// models, so only what its rewrites set (`model_override`, `model_mapping`'s values).
    pub(crate) fn models_sent(&self) -> Vec<String> {
        let mut out: Vec<String> = match &self.dataset {
            DatasetPlan::Trace(t) => {
                let mut out: Vec<String> = t
                    .model_override
                    .iter()
                    .chain(t.model_mapping.values())
                    .cloned()
                    .collect();
                // A public trace's unmapped records go to the run's model.
                if t.format.synthesized() && t.model_override.is_none() {
                    out.push(self.request.model.clone());
                }
                out
            }
            _ => vec![self.request.model.clone()],
        };
        for class in self.settings.mix.iter().flatten() {
            if let Some(model) = &class.model {
                out.push(served_name(model).to_string());
            }
        }
        let mut once = Vec::with_capacity(out.len());
        for m in out {
            if !once.contains(&m) {
                once.push(m);
            }
        }
        once
    }

    /// Inputs per request for the `inputs_per_s` metric: the plan's `batch_size` or
    /// `num_documents` as written (a run that sets neither reports no `inputs_per_s`).
    pub fn inputs_per_request(&self) -> Option<u32> {
        let ds = &self.settings.dataset.spec;
        ds.batch_size.or(ds.num_documents)
    }

    /// Settings as stored and printed, by the one redaction rule
    /// (`secrets::redact_settings`): secret header values and secret-looking keys hidden.
    pub(crate) fn redacted_settings(&self) -> Value {
        crate::secrets::redact_settings(
            &serde_json::to_value(&self.settings).unwrap_or(Value::Null),
        )
    }
}

pub use crate::secrets::is_secret_header;

/// Canonical JSON: keys sorted at every level, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sort(&map[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(value).to_string()
}

fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The request plan of `settings`: the fields, limit, streaming and output length every
/// request of the run sends, for the model name the server knows.
pub(crate) fn request_plan(settings: &RunSettings) -> RequestPlan {
    RequestPlan::resolve(
        &settings.request,
        settings.api,
        served_name(&settings.model),
    )
}

/// The name the server knows `model` by: its `served_name`, else its table's name.
pub fn served_name(model: &Named<ModelSpec>) -> &str {
    model.spec.served_name.as_deref().unwrap_or(&model.name)
}

/// The stable id of a run: the first 12 hex digits of the SHA-256 of its canonical
/// settings. The endpoint's `hardware` and `labels` are left out: they describe and price
/// the deployment, never change what a run sends, so adding them or changing a price
/// keeps every id (and comparisons by id).
pub fn run_id(settings: &RunSettings) -> String {
    let mut value = serde_json::to_value(settings).unwrap_or(Value::Null);
    if let Some(endpoint) = value.get_mut("endpoint").and_then(Value::as_object_mut) {
        endpoint.remove("hardware");
        endpoint.remove("labels");
    }
    sha256_hex(&canonical_json(&value))[..12].to_string()
}

/// The users of a run's `output_tps_per_user`: a closed loop's fixed concurrency (its
/// conversations, for a multi-turn run); none for any other load, whose users are the
/// mean of its requests in flight.
pub fn users_of(settings: &RunSettings) -> Option<u32> {
    RunLoad::of(&settings.load, settings.dataset.spec.kind, settings.seed)
        .mode
        .users()
}

/// What the run's endpoint runs on, for the capacity metrics (none without `hardware`).
pub fn hardware_of(settings: &RunSettings) -> Option<crate::metrics::Hardware> {
    settings
        .endpoint
        .spec
        .hardware
        .as_ref()
        .map(|h| h.metrics())
}

/// The seed of a run's request set: the plan seed mixed with every setting but the
/// endpoint, so runs that differ only by endpoint get identical prompts and every other
/// run gets its own.
pub fn dataset_seed(settings: &RunSettings) -> u64 {
    let mut value = serde_json::to_value(settings).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("endpoint");
    }
    let hex = sha256_hex(&canonical_json(&value));
    u64::from_str_radix(&hex[..16], 16).unwrap_or(0)
}
