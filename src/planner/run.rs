//! `RunSpec`: one fully resolved run, with its ordinal and stable id.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::plan::{
    ApiSpec, CacheState, DatasetSpec, EndpointSpec, LoadSpec, ModelSpec, RequestSpec,
};

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
}

impl RunSpec {
    /// The model name sent in requests.
    pub fn served_model(&self) -> &str {
        self.settings
            .model
            .spec
            .served_name
            .as_deref()
            .unwrap_or(&self.settings.model.name)
    }

    /// Settings as stored and printed, by the one redaction rule
    /// (`secrets::redact_settings`): secret header values and secret-looking keys hidden.
    pub fn redacted_settings(&self) -> Value {
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

/// The stable id of a run: the first 12 hex digits of the SHA-256 of its canonical settings.
pub fn run_id(settings: &RunSettings) -> String {
    let value = serde_json::to_value(settings).unwrap_or(Value::Null);
    sha256_hex(&canonical_json(&value))[..12].to_string()
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
