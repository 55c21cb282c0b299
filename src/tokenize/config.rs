//! Reading `tokenizer_config.json` and `chat_template.jinja` of a tokenizer folder: the chat
//! template and the BOS/EOS token strings (plain strings or AddedToken objects).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::TokenizeError;

/// What a tokenizer folder says besides `tokenizer.json`.
#[derive(Debug, Default)]
pub(crate) struct FolderConfig {
    /// The template source and the file it came from.
    pub chat_template: Option<(String, PathBuf)>,
    /// `bos_token`, `eos_token`, ... as (name, text), passed to the template like
    /// transformers passes its special-tokens map.
    pub special_tokens: Vec<(String, String)>,
}

/// The special-token keys of `tokenizer_config.json` a template may use.
const SPECIAL_TOKEN_KEYS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "pad_token",
    "sep_token",
    "cls_token",
    "mask_token",
];

/// Reads the optional files of a tokenizer folder. Missing files are not errors; unreadable
/// or malformed ones are.
pub(crate) fn read_folder(dir: &Path) -> Result<FolderConfig, TokenizeError> {
    let mut out = FolderConfig::default();
    let config_path = dir.join("tokenizer_config.json");
    if config_path.is_file() {
        let config = read_json(&config_path)?;
        out.special_tokens = SPECIAL_TOKEN_KEYS
            .iter()
            .filter_map(|k| Some((k.to_string(), config.get(*k).and_then(token_text)?)))
            .collect();
        if let Some(source) = config.get("chat_template").and_then(template_text) {
            out.chat_template = Some((source, config_path.clone()));
        }
    }
    // transformers reads a separate template file in preference to the config's key.
    let jinja_path = dir.join("chat_template.jinja");
    if jinja_path.is_file() {
        let source = crate::text::read(&jinja_path).map_err(|source| TokenizeError::Read {
            path: jinja_path.clone(),
            source,
        })?;
        out.chat_template = Some((source, jinja_path));
    } else if out.chat_template.is_none() {
        let json_path = dir.join("chat_template.json");
        if json_path.is_file() {
            let value = read_json(&json_path)?;
            if let Some(source) = value.get("chat_template").and_then(template_text) {
                out.chat_template = Some((source, json_path));
            }
        }
    }
    Ok(out)
}

fn read_json(path: &Path) -> Result<Value, TokenizeError> {
    let text = crate::text::read(path).map_err(|source| TokenizeError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| TokenizeError::Config {
        path: path.to_path_buf(),
        source,
    })
}

/// `"<s>"` or `{"content": "<s>", ...}` (an AddedToken object).
fn token_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => map.get("content").and_then(Value::as_str).map(String::from),
        _ => None,
    }
}

/// A template string, or a list of named templates (`[{"name": "default", "template": ...}]`),
/// of which the `default` one (else the first) is used.
fn template_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let named = |name: &str| {
                items.iter().find(|item| {
                    item.get("name").and_then(Value::as_str) == Some(name)
                        && item.get("template").is_some()
                })
            };
            named("default")
                .or_else(|| items.first())
                .and_then(|item| item.get("template"))
                .and_then(Value::as_str)
                .map(String::from)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_text_accepts_strings_and_added_token_objects() {
        assert_eq!(token_text(&json!("<s>")).as_deref(), Some("<s>"));
        assert_eq!(
            token_text(&json!({"content": "<bos>", "special": true})).as_deref(),
            Some("<bos>")
        );
        assert_eq!(token_text(&json!(null)), None);
    }

    #[test]
    fn template_text_picks_the_default_named_template() {
        let v = json!([
            {"name": "tool_use", "template": "T"},
            {"name": "default", "template": "D"}
        ]);
        assert_eq!(template_text(&v).as_deref(), Some("D"));
        let v = json!([{"name": "rag", "template": "R"}]);
        assert_eq!(template_text(&v).as_deref(), Some("R"));
    }
}
