//! The request fields of a run, with OpenAI names: `[defaults]` and axis overrides turned
//! into the map `api::build_body` sends. Only what the plan set is sent. `RequestPlan`
//! (`resolved`) holds them with the limit field, streaming and the output length.

use serde_json::{Map, Value};

use crate::api::ApiKind;
use crate::plan::{RequestSpec, StopSpec};

/// Fields common to every request of the run (everything but the output length when it
/// is a range, which is drawn per request).
pub fn base_fields(req: &RequestSpec) -> Map<String, Value> {
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    };
    put("min_tokens", req.min_tokens.map(Value::from));
    put("temperature", req.temperature.map(Value::from));
    put("top_p", req.top_p.map(Value::from));
    put("top_k", req.top_k.map(Value::from));
    put(
        "stop",
        req.stop.as_ref().map(|s| match s {
            StopSpec::One(x) => Value::from(x.clone()),
            StopSpec::Many(list) => Value::from(list.clone()),
        }),
    );
    put(
        "stop_token_ids",
        req.stop_token_ids.clone().map(Value::from),
    );
    put("n", req.n.map(Value::from));
    put("logprobs", req.logprobs.map(Value::from));
    put("top_logprobs", req.top_logprobs.map(Value::from));
    put("frequency_penalty", req.frequency_penalty.map(Value::from));
    put("presence_penalty", req.presence_penalty.map(Value::from));
    put(
        "repetition_penalty",
        req.repetition_penalty.map(Value::from),
    );
    put("seed", req.seed.map(Value::from));
    put("ignore_eos", req.ignore_eos.map(Value::from));
    for (k, v) in &req.extra {
        m.insert(k.clone(), v.clone());
    }
    m
}

/// The output-limit field name of `kind`: the Responses API's `max_output_tokens`, else
/// what the plan asked for (`max_tokens`, or `max_completion_tokens`).
pub fn max_tokens_field(req: &RequestSpec, kind: ApiKind) -> &'static str {
    if kind == ApiKind::Responses {
        "max_output_tokens"
    } else if req.max_completion_tokens == Some(true) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_fields_are_sent() {
        let req = RequestSpec {
            temperature: Some(0.0),
            ignore_eos: Some(true),
            ..Default::default()
        };
        let m = base_fields(&req);
        assert_eq!(
            Value::Object(m),
            serde_json::json!({"temperature": 0.0, "ignore_eos": true})
        );
        assert!(base_fields(&RequestSpec::default()).is_empty());
    }

    #[test]
    fn responses_limit_is_max_output_tokens() {
        let plain = RequestSpec::default();
        let completion = RequestSpec {
            max_completion_tokens: Some(true),
            ..Default::default()
        };
        assert_eq!(max_tokens_field(&plain, ApiKind::Chat), "max_tokens");
        assert_eq!(
            max_tokens_field(&completion, ApiKind::Chat),
            "max_completion_tokens"
        );
        for req in [&plain, &completion] {
            assert_eq!(
                max_tokens_field(req, ApiKind::Responses),
                "max_output_tokens"
            );
        }
    }
}
