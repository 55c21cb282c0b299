//! `body_template`: a minijinja template of the whole request body, for servers whose API
//! is not quite OpenAI's (EvalScope's `--query-template`). The context holds `model`,
//! `prompt` (text, or token ids), `messages`, `stream` and every request field by its
//! OpenAI name (`max_tokens`, `temperature`, …). The result must be JSON; `reject_fields`
//! are removed from it. `body_template = "@path"` reads the template from a file relative
//! to the plan's folder. Validation renders it once with sample values (`trial`).

use std::path::Path;

use bytes::Bytes;
use minijinja::{context, Environment};
use serde_json::{Map, Value};

use crate::api::Prompt;

/// A body template that cannot be read, compiled or rendered to JSON.
#[derive(Debug, thiserror::Error)]
#[error("body_template: {reason}")]
pub struct TemplateError {
    pub reason: String,
}

/// What one request's body is made of.
pub struct TemplateInput<'a> {
    pub model: &'a str,
    pub prompt: &'a Prompt,
    pub fields: &'a Map<String, Value>,
    pub stream: bool,
    pub reject_fields: &'a [String],
}

fn prompt_values(prompt: &Prompt) -> (Value, Value) {
    let user = |text: &str| serde_json::json!([{"role": "user", "content": text}]);
    match prompt {
        Prompt::Text(t) => (Value::from(t.clone()), user(t)),
        Prompt::TokenIds(ids) => (Value::from(ids.clone()), Value::Array(Vec::new())),
        Prompt::Messages(m) => {
            let last = m
                .iter()
                .rev()
                .find_map(|x| x.get("content").and_then(Value::as_str))
                .unwrap_or("");
            (Value::from(last), Value::Array(m.clone()))
        }
        Prompt::Body(b) => (
            b.get("prompt").cloned().unwrap_or(Value::Null),
            b.get("messages").cloned().unwrap_or(Value::Null),
        ),
        Prompt::Embedding(inputs) => (Value::from(inputs.clone()), Value::Array(Vec::new())),
        Prompt::Rerank { query, documents } => {
            (Value::from(query.clone()), Value::from(documents.clone()))
        }
    }
}

/// Renders one body. `env` holds the compiled template named `body`.
pub fn render(env: &Environment<'_>, input: &TemplateInput<'_>) -> Result<Bytes, TemplateError> {
    let bad = |reason: String| TemplateError { reason };
    let tmpl = env
        .get_template("body")
        .map_err(|e| bad(crate::control::chain(&e)))?;
    let (prompt, messages) = prompt_values(input.prompt);
    let ctx = context! {
        model => input.model,
        prompt => prompt,
        messages => messages,
        stream => input.stream,
        fields => input.fields,
        ..minijinja::Value::from_serialize(input.fields)
    };
    let text = tmpl
        .render(ctx)
        .map_err(|e| bad(format!("rendering failed: {e:#}")))?;
    let mut body: Value = serde_json::from_str(&text).map_err(|e| {
        let excerpt: String = text.chars().take(200).collect();
        bad(format!("the rendered body is not JSON ({e}): {excerpt}"))
    })?;
    if let Some(map) = body.as_object_mut() {
        for f in input.reject_fields {
            map.remove(f);
        }
    }
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|e| bad(e.to_string()))
}

/// An environment with the template compiled, or the compile error.
pub fn compile(source: &str) -> Result<Environment<'static>, TemplateError> {
    let mut env = Environment::new();
    env.add_template_owned("body", source.to_string())
        .map_err(|e| TemplateError {
            reason: format!("cannot compile: {e:#}"),
        })?;
    Ok(env)
}

/// The template text of a `body_template` value: the value itself, or with `@path` the
/// file's contents (relative to `base_dir`, the plan's folder).
pub fn source(value: &str, base_dir: &Path) -> Result<String, TemplateError> {
    let Some(file) = value.strip_prefix('@') else {
        return Ok(value.to_string());
    };
    let path = base_dir.join(file);
    crate::text::read(&path).map_err(|e| TemplateError {
        reason: format!("cannot read {}: {e}", path.display()),
    })
}

/// Reads (`@path`) and compiles a `body_template` value.
pub fn load(value: &str, base_dir: &Path) -> Result<Environment<'static>, TemplateError> {
    compile(&source(value, base_dir)?)
}

/// Renders the template once with a sample prompt and `fields` (the run's request fields):
/// the problem a run would meet on its first request, said at validation.
pub fn trial(value: &str, base_dir: &Path, fields: &Map<String, Value>) -> Result<(), String> {
    let env = load(value, base_dir).map_err(|e| e.to_string())?;
    let prompt = Prompt::Text("a sample prompt".into());
    let input = TemplateInput {
        model: "model",
        prompt: &prompt,
        fields,
        stream: true,
        reject_fields: &[],
    };
    render(&env, &input).map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_json_with_fields_and_prompt() {
        let env = compile(r#"{"model": {{ model | tojson }}, "input": {{ prompt | tojson }}, "max_new_tokens": {{ max_tokens }}, "seed": 1}"#).unwrap();
        let mut fields = Map::new();
        fields.insert("max_tokens".into(), 16.into());
        let prompt = Prompt::Text("hi \"there\"".into());
        let reject = vec!["seed".to_string()];
        let input = TemplateInput {
            model: "m",
            prompt: &prompt,
            fields: &fields,
            stream: false,
            reject_fields: &reject,
        };
        let body: Value = serde_json::from_slice(&render(&env, &input).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"model": "m", "input": "hi \"there\"", "max_new_tokens": 16})
        );
    }

    #[test]
    fn non_json_output_is_a_clear_error() {
        let env = compile("not json {{ model }}").unwrap();
        let prompt = Prompt::Text("x".into());
        let input = TemplateInput {
            model: "m",
            prompt: &prompt,
            fields: &Map::new(),
            stream: false,
            reject_fields: &[],
        };
        let err = render(&env, &input).unwrap_err().to_string();
        assert!(err.contains("not JSON"), "{err}");
        assert!(compile("{{ unclosed").is_err());
    }

    #[test]
    fn a_template_file_is_read_relative_to_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.json"), r#"{"m": {{ model | tojson }}}"#).unwrap();
        assert_eq!(
            source("@t.json", dir.path()).unwrap(),
            r#"{"m": {{ model | tojson }}}"#
        );
        assert_eq!(source("{}", dir.path()).unwrap(), "{}");
        assert!(trial("@t.json", dir.path(), &Map::new()).is_ok());
        let err = trial("@missing.json", dir.path(), &Map::new()).unwrap_err();
        assert!(err.contains("missing.json"), "{err}");
        let err = trial("{{ model }}", dir.path(), &Map::new()).unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
    }
}
