//! `RequestPlan`: what every request of a run sends, worked out once (by the planner, for
//! each run: `RunSpec::request`) from the optional `RequestSpec`: the API, the served
//! model name, the fields the plan set (and only those), the output-limit field's name,
//! whether responses stream, and where each request's output length comes from.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use super::fields::{base_fields, max_tokens_field};
use crate::api::ApiKind;
use crate::plan::{ApiSpec, RequestSpec, TokenRange};

/// A run's requests as the plan resolved them.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestPlan {
    pub api: ApiKind,
    /// The model name sent in requests (the model's `served_name`, else its table name).
    pub model: String,
    /// The fields every request carries, by their OpenAI names (only what the plan set).
    pub fields: Map<String, Value>,
    /// The name the output limit is sent under (`max_tokens`, `max_completion_tokens`,
    /// or the Responses API's `max_output_tokens`).
    pub limit_field: &'static str,
    /// Whether responses stream: the plan's `stream` (default true), for an API that can.
    pub stream: bool,
    /// Ask for per-chunk usage (`continuous_usage`): only on a chat or completions stream.
    pub continuous_usage: bool,
    pub output: OutputLen,
    /// `body_template` as written (inline, or `"@path"` from the plan's folder).
    pub body_template: Option<String>,
}

/// Where a request's output limit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputLen {
    /// The same for every request.
    Fixed(u32),
    /// Drawn per request, uniform in `min..=max`, from the run's seeded stream.
    Drawn { min: u32, max: u32 },
    /// The plan sets none: the dataset's recorded answer length when it has one (ShareGPT,
    /// a multi-turn script's `assistant_tokens`), else no limit is sent.
    Recorded,
}

impl OutputLen {
    /// The plan's `output_tokens`.
    pub fn of(output_tokens: Option<TokenRange>) -> OutputLen {
        match output_tokens {
            Some(TokenRange::Fixed(n)) => OutputLen::Fixed(n),
            Some(TokenRange::Range { min, max }) => OutputLen::Drawn { min, max },
            None => OutputLen::Recorded,
        }
    }

    /// The output length of one request; `recorded` is the dataset's, used only when the
    /// plan sets none. Only a drawn length takes a number from `rng`.
    pub fn draw(self, recorded: Option<u32>, rng: &mut ChaCha8Rng) -> Option<u32> {
        match self {
            OutputLen::Fixed(n) => Some(n),
            OutputLen::Drawn { min, max } => Some(rng.gen_range(min.min(max)..=max.max(min))),
            OutputLen::Recorded => recorded,
        }
    }

    /// The largest length the plan asks for, when it asks for one.
    pub fn upper(self) -> Option<u32> {
        match self {
            OutputLen::Fixed(n) => Some(n),
            OutputLen::Drawn { min, max } => Some(min.max(max)),
            OutputLen::Recorded => None,
        }
    }
}

impl RequestPlan {
    /// The requests of `request` sent to `api` for the model served as `model`.
    pub fn resolve(request: &RequestSpec, api: ApiSpec, model: &str) -> RequestPlan {
        let api = super::api_kind(api);
        RequestPlan {
            api,
            model: model.to_string(),
            fields: base_fields(request),
            limit_field: max_tokens_field(request, api),
            stream: request.stream.unwrap_or(true) && api.can_stream(),
            continuous_usage: request.continuous_usage == Some(true)
                && request.stream.unwrap_or(true)
                && matches!(api, ApiKind::Chat | ApiKind::Completions),
            output: OutputLen::of(request.output_tokens),
            body_template: request.body_template.clone(),
        }
    }

    /// The fields of one request whose output limit is `limit` (not sent to the APIs that
    /// generate no output).
    pub fn fields_with(&self, limit: Option<u32>) -> Map<String, Value> {
        let mut fields = self.fields.clone();
        if let Some(n) = limit {
            if !matches!(self.api, ApiKind::Embeddings | ApiKind::Rerank) {
                fields.insert(self.limit_field.to_string(), n.into());
            }
        }
        fields
    }

    /// The `chat_template_kwargs` the requests send, which client-side counts must apply
    /// as the server does (empty when none).
    pub fn template_kwargs(&self) -> Map<String, Value> {
        self.fields
            .get("chat_template_kwargs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use serde_json::json;

    fn request(v: Value) -> RequestSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn defaults_are_resolved() {
        let plan = RequestPlan::resolve(&RequestSpec::default(), ApiSpec::Chat, "m");
        assert!(
            plan.stream,
            "requests stream unless the plan says otherwise"
        );
        assert_eq!(plan.output, OutputLen::Recorded);
        assert_eq!(plan.limit_field, "max_tokens");
        assert!(plan.fields.is_empty(), "only what the plan set is sent");
        assert_eq!(plan.model, "m");
        assert_eq!(plan.api, ApiKind::Chat);
        // An API that cannot stream does not, whatever the plan's default.
        let embed = RequestPlan::resolve(&RequestSpec::default(), ApiSpec::Embeddings, "m");
        assert!(!embed.stream);
        let off = RequestPlan::resolve(&request(json!({"stream": false})), ApiSpec::Chat, "m");
        assert!(!off.stream);
    }

    #[test]
    fn fields_limit_and_output_are_resolved() {
        let spec = request(json!({
            "output_tokens": {"min": 10, "max": 20},
            "max_completion_tokens": true,
            "temperature": 0.0,
            "extra": {"chat_template_kwargs": {"enable_thinking": false}},
        }));
        let plan = RequestPlan::resolve(&spec, ApiSpec::Chat, "m");
        assert_eq!(plan.limit_field, "max_completion_tokens");
        assert_eq!(plan.output, OutputLen::Drawn { min: 10, max: 20 });
        assert_eq!(plan.output.upper(), Some(20));
        assert_eq!(
            Value::Object(plan.template_kwargs()),
            json!({"enable_thinking": false})
        );
        let sent = plan.fields_with(Some(12));
        assert_eq!(sent["max_completion_tokens"], json!(12));
        assert_eq!(sent["temperature"], json!(0.0));
        let rerank = RequestPlan::resolve(&spec, ApiSpec::Rerank, "m");
        assert!(!rerank.fields_with(Some(12)).contains_key("max_tokens"));
        let responses = RequestPlan::resolve(&spec, ApiSpec::Responses, "m");
        assert_eq!(responses.limit_field, "max_output_tokens");
    }

    #[test]
    fn output_lengths_are_fixed_drawn_or_recorded() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..100 {
            let n = OutputLen::Drawn { min: 10, max: 20 }
                .draw(Some(7), &mut rng)
                .unwrap();
            assert!((10..=20).contains(&n));
        }
        assert_eq!(OutputLen::Fixed(5).draw(Some(7), &mut rng), Some(5));
        assert_eq!(OutputLen::Recorded.draw(Some(7), &mut rng), Some(7));
        assert_eq!(OutputLen::Recorded.draw(None, &mut rng), None);
        assert_eq!(OutputLen::of(None), OutputLen::Recorded);
    }
}
