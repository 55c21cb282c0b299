//! `[matrix]`: axes in the order written, plus `exclude` and `include`. An array is
//! the list of an axis's values; a scalar (or a table) is a one-value axis.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::load_spec::LoadSpec;
use super::spec::{ApiSpec, CacheState, DatasetSpec};
use super::RequestSpec;

/// Where an axis's value lands in a run's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AxisTarget {
    /// `endpoint`, `model`, `dataset`, `cache_state`, `tokenize_prompt`, `api`, `load`.
    Run,
    /// A key of the run's dataset (`input_tokens`, `prefix_tokens`, …).
    Dataset,
    /// A request setting of `[defaults]` (`output_tokens`, `temperature`, …).
    Request,
}

/// Axes that choose a run's parts rather than override a setting.
pub(crate) const RUN_AXES: [&str; 7] = [
    "endpoint",
    "model",
    "dataset",
    "cache_state",
    "tokenize_prompt",
    "api",
    "load",
];

/// Dataset keys that cannot be axes (they choose the dataset rather than tune it; a mix's
/// classes are compared as datasets of their own: `dataset = ["chat", "prod-mix"]`).
const DATASET_NOT_AXES: [&str; 2] = ["kind", "mix"];
/// Request keys that cannot be axes. (`extra` is one: each value is a table merged into
/// `[defaults].extra`.)
const REQUEST_NOT_AXES: [&str; 1] = ["body_template"];

fn property_names<T: schemars::JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

/// Which part of a run an axis key sets, or `None` if it is not an axis.
pub(crate) fn axis_target(key: &str) -> Option<AxisTarget> {
    if RUN_AXES.contains(&key) {
        return Some(AxisTarget::Run);
    }
    if !DATASET_NOT_AXES.contains(&key) && property_names::<DatasetSpec>().iter().any(|k| k == key)
    {
        return Some(AxisTarget::Dataset);
    }
    if !REQUEST_NOT_AXES.contains(&key) && property_names::<RequestSpec>().iter().any(|k| k == key)
    {
        return Some(AxisTarget::Request);
    }
    None
}

/// Every key allowed in `[matrix]` (axes, then `exclude` and `include`).
pub fn matrix_keys() -> Vec<String> {
    let mut keys: Vec<String> = RUN_AXES.iter().map(|s| s.to_string()).collect();
    keys.extend(
        property_names::<DatasetSpec>()
            .into_iter()
            .filter(|k| !DATASET_NOT_AXES.contains(&k.as_str())),
    );
    keys.extend(
        property_names::<RequestSpec>()
            .into_iter()
            .filter(|k| !REQUEST_NOT_AXES.contains(&k.as_str())),
    );
    keys.push("exclude".into());
    keys.push("include".into());
    keys
}

/// The matrix as written: axes in order, each with its values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MatrixSpec {
    pub axes: Vec<(String, Vec<Value>)>,
    pub exclude: Vec<Map<String, Value>>,
    pub include: Vec<Map<String, Value>>,
}

impl Serialize for MatrixSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = Map::new();
        for (key, values) in &self.axes {
            map.insert(key.clone(), Value::Array(values.clone()));
        }
        if !self.exclude.is_empty() {
            let list = self.exclude.iter().cloned().map(Value::Object).collect();
            map.insert("exclude".into(), Value::Array(list));
        }
        if !self.include.is_empty() {
            let list = self.include.iter().cloned().map(Value::Object).collect();
            map.insert("include".into(), Value::Array(list));
        }
        map.serialize(s)
    }
}

fn entries<E: serde::de::Error>(key: &str, value: Value) -> Result<Vec<Map<String, Value>>, E> {
    let Value::Array(items) = value else {
        return Err(E::custom(format!("`{key}` must be an array of tables")));
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Object(map) => Ok(map),
            _ => Err(E::custom(format!("every `{key}` entry must be a table"))),
        })
        .collect()
}

impl<'de> Deserialize<'de> for MatrixSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let mut spec = MatrixSpec::default();
        for (key, value) in map {
            match key.as_str() {
                "exclude" => spec.exclude = entries(&key, value)?,
                "include" => spec.include = entries(&key, value)?,
                _ => {
                    if axis_target(&key).is_none() {
                        return Err(serde::de::Error::custom(format!("unknown axis `{key}`")));
                    }
                    let values = match value {
                        Value::Array(values) => values,
                        other => vec![other],
                    };
                    spec.axes.push((key, values));
                }
            }
        }
        Ok(spec)
    }
}

fn axis_schema(one: Value) -> Value {
    serde_json::json!({
        "anyOf": [one, {"type": "array", "items": one, "minItems": 1}]
    })
}

fn properties_of<T: schemars::JsonSchema>(
    gen: &mut schemars::SchemaGenerator,
) -> Map<String, Value> {
    let reference = gen.subschema_for::<T>();
    let name = reference
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .unwrap_or_default()
        .to_string();
    gen.definitions()
        .get(&name)
        .and_then(|def| def.get("properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

impl schemars::JsonSchema for MatrixSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MatrixSpec".into()
    }

    fn json_schema(gen: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Each axis's schema for one value; an axis takes one value or a list of them,
        // an `exclude` or `include` entry one value per axis.
        let mut one = Map::new();
        let string = serde_json::json!({"type": "string"});
        one.insert("endpoint".into(), string.clone());
        one.insert("model".into(), string.clone());
        one.insert("dataset".into(), string);
        one.insert(
            "cache_state".into(),
            gen.subschema_for::<CacheState>().into(),
        );
        one.insert(
            "tokenize_prompt".into(),
            serde_json::json!({"type": "boolean"}),
        );
        one.insert("api".into(), gen.subschema_for::<ApiSpec>().into());
        one.insert("load".into(), gen.subschema_for::<LoadSpec>().into());
        for (key, schema) in properties_of::<DatasetSpec>(gen) {
            if !DATASET_NOT_AXES.contains(&key.as_str()) {
                one.insert(key, schema);
            }
        }
        for (key, schema) in properties_of::<RequestSpec>(gen) {
            if !REQUEST_NOT_AXES.contains(&key.as_str()) {
                one.insert(key, schema);
            }
        }
        let mut props: Map<String, Value> = one
            .iter()
            .map(|(k, s)| (k.clone(), axis_schema(s.clone())))
            .collect();
        let entry = |what: &str| {
            serde_json::json!({
                "type": "array",
                "description": what,
                "items": {"type": "object", "properties": one, "additionalProperties": false}
            })
        };
        props.insert(
            "exclude".into(),
            entry("Points to drop: each entry drops every point matching all its keys (axes of this matrix)."),
        );
        props.insert(
            "include".into(),
            entry("Points to extend or add: an entry extends every point matching its axis keys, or is added as a new point."),
        );
        schemars::json_schema!({
            "type": "object",
            "description": "Axes in the order written (first outermost); an array lists an axis's values, a scalar or table is a one-value axis.",
            "properties": props,
            "additionalProperties": false
        })
    }
}
