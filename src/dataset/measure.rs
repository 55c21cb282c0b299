//! Counting a prompt the way the server will see it, per prompt mode: chat (rendered through
//! the chat template, encoded without special tokens), completions text (encoded with them),
//! or token ids (the ids themselves). Also turns measured text into the final `Prompt`.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{DatasetContext, DatasetError};
use crate::api::Prompt;
use crate::plan::spec::ChatTemplateMode;
use crate::tokenize::{TokenizeError, Tokenizer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Text goes to a chat API; `template`: counted through the chat template.
    Chat { template: bool },
    /// Raw text to `/v1/completions`.
    Text,
    /// Token ids to `/v1/completions`.
    TokenIds,
}

/// A prompt's length as the server will see it, and its ids in token-id mode.
#[derive(Debug, Clone, Default)]
pub(crate) struct Measured {
    pub count: Option<usize>,
    pub ids: Option<Vec<u32>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Measure {
    tok: Option<Arc<Tokenizer>>,
    mode: Mode,
    warning: Option<String>,
    kwargs: Map<String, Value>,
}

impl Measure {
    pub fn new(ctx: &DatasetContext) -> Result<Measure, DatasetError> {
        let tok = ctx.tokenizer.clone();
        let mut warning = None;
        let mode = if ctx.tokenize_prompt {
            if tok.is_none() {
                return Err(DatasetError::NeedsTokenizer {
                    what: "`tokenize_prompt = true`".into(),
                });
            }
            Mode::TokenIds
        } else if ctx.chat {
            let has = tok.as_ref().map(|t| t.has_chat_template());
            let template = match (ctx.chat_template, has) {
                (ChatTemplateMode::Off, _) | (_, None) => false,
                (ChatTemplateMode::On, Some(false)) => {
                    let path = tok.as_ref().map(|t| t.path().to_path_buf());
                    return Err(TokenizeError::NoChatTemplate {
                        path: path.unwrap_or_default(),
                    }
                    .into());
                }
                (_, Some(has)) => has,
            };
            if let (false, Some(t)) = (template, tok.as_ref()) {
                warning = Some(format!(
                    "chat prompts are counted without a chat template (tokenizer {}): the \
                     server will see more input tokens than the target",
                    t.path().display()
                ));
            }
            Mode::Chat { template }
        } else {
            Mode::Text
        };
        Ok(Measure {
            tok,
            mode,
            warning,
            kwargs: ctx.template_kwargs.clone(),
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn warning(&self) -> Option<String> {
        self.warning.clone()
    }

    pub fn tokenizer(&self) -> Option<&Tokenizer> {
        self.tok.as_deref()
    }

    /// The tokenizer, or an error saying `what` needs one.
    pub fn require(&self, what: &str) -> Result<&Tokenizer, DatasetError> {
        self.tok
            .as_deref()
            .ok_or_else(|| DatasetError::NeedsTokenizer { what: what.into() })
    }

    /// `messages` rendered through the chat template with the generation prompt and the
    /// run's template variables.
    pub fn render(&self, tok: &Tokenizer, messages: &[Value]) -> Result<String, DatasetError> {
        Ok(tok.render_chat_with(messages, true, &self.kwargs)?)
    }

    /// The text a chat template puts before and after a single user message's content,
    /// or empty strings when text is counted without a template. `None` when the template
    /// changes the content itself (so the content cannot be counted apart).
    pub(crate) fn frame(&self) -> Result<Option<(String, String)>, DatasetError> {
        let (Mode::Chat { template: true }, Some(tok)) = (self.mode, self.tok.as_deref()) else {
            return Ok(Some((String::new(), String::new())));
        };
        const MARKER: &str = "\u{E000}perfplan\u{E001}";
        let rendered = self.render(tok, &[user_message(MARKER)])?;
        let mut parts = rendered.split(MARKER);
        match (parts.next(), parts.next(), parts.next()) {
            (Some(head), Some(tail), None) => Ok(Some((head.to_string(), tail.to_string()))),
            _ => Ok(None),
        }
    }

    /// Tokens the server sees before a text prompt's content: the chat template's opening,
    /// or the special tokens (BOS) a completions prompt gets. 0 when unknown.
    pub(crate) fn lead_tokens(&self) -> Result<usize, DatasetError> {
        let Some(tok) = self.tok.as_deref() else {
            return Ok(0);
        };
        match self.mode {
            Mode::Chat { template: true } => match self.frame()? {
                Some((head, _)) => Ok(tok.count(&head, false)?),
                None => Ok(0),
            },
            Mode::Chat { template: false } => Ok(0),
            Mode::Text | Mode::TokenIds => {
                let bare = tok.encode("Hello", false)?;
                let with = tok.encode("Hello", true)?;
                Ok((0..=with.len().saturating_sub(bare.len()))
                    .find(|&k| with[k..].starts_with(&bare))
                    .unwrap_or(0))
            }
        }
    }

    /// Tokens of bare content (no special tokens, no template); `None` without a tokenizer.
    pub fn content(&self, text: &str) -> Result<Option<usize>, DatasetError> {
        match &self.tok {
            Some(t) => Ok(Some(t.count(text, false)?)),
            None => Ok(None),
        }
    }

    /// A text prompt as the server will see it in this mode.
    pub fn text(&self, text: &str) -> Result<Measured, DatasetError> {
        let Some(tok) = self.tok.as_deref() else {
            return Ok(Measured::default());
        };
        let measured = match self.mode {
            Mode::Chat { template: true } => {
                Measured::count(tok.count_chat_with(&[user_message(text)], &self.kwargs)?)
            }
            Mode::Chat { template: false } => Measured::count(tok.count(text, false)?),
            Mode::Text => Measured::count(tok.count(text, true)?),
            Mode::TokenIds => Measured::ids(tok.encode(text, true)?),
        };
        Ok(measured)
    }

    /// A conversation as the server will see it in this mode.
    pub fn messages(&self, messages: &[Value]) -> Result<Measured, DatasetError> {
        let Some(tok) = self.tok.as_deref() else {
            return Ok(Measured::default());
        };
        let measured = match self.mode {
            Mode::Chat { template: true } => {
                Measured::count(tok.count_chat_with(messages, &self.kwargs)?)
            }
            Mode::Chat { template: false } => {
                let mut total = 0;
                for text in messages.iter().filter_map(message_text) {
                    total += tok.count(text, false)?;
                }
                Measured::count(total)
            }
            Mode::Text => Measured::count(tok.count(&self.render(tok, messages)?, true)?),
            Mode::TokenIds => Measured::ids(tok.encode_chat_with(messages, &self.kwargs)?),
        };
        Ok(measured)
    }

    /// The final prompt of measured text.
    pub(crate) fn finish_text(&self, text: String, m: Measured) -> (Prompt, Option<u32>) {
        let count = m.count.map(to_u32);
        match m.ids {
            Some(ids) => (Prompt::TokenIds(ids), count),
            None => (Prompt::Text(text), count),
        }
    }

    /// The final prompt of a measured conversation (rendered text for completions).
    pub(crate) fn finish_messages(
        &self,
        messages: Vec<Value>,
        m: Measured,
    ) -> Result<(Prompt, Option<u32>), DatasetError> {
        let count = m.count.map(to_u32);
        if let Some(ids) = m.ids {
            return Ok((Prompt::TokenIds(ids), count));
        }
        if self.mode == Mode::Text {
            let tok = self.require("a `messages` prompt sent to /v1/completions")?;
            return Ok((Prompt::Text(self.render(tok, &messages)?), count));
        }
        Ok((Prompt::Messages(messages), count))
    }
}

impl Measured {
    pub fn count(n: usize) -> Measured {
        Measured {
            count: Some(n),
            ids: None,
        }
    }
    pub fn ids(ids: Vec<u32>) -> Measured {
        Measured {
            count: Some(ids.len()),
            ids: Some(ids),
        }
    }
}

/// Counts prompts built during a run (multi-turn turns: the whole history; trace bodies)
/// as the server will see them, like the dataset's own prompts: chat through the chat
/// template, completions text with special tokens. Off the timing path: the suite's
/// database writer calls it.
#[derive(Debug, Clone)]
pub struct PromptCounter(Measure);

impl PromptCounter {
    /// `None` when the run's model has no tokenizer (nothing can be counted).
    pub fn new(ctx: &DatasetContext) -> Result<Option<PromptCounter>, DatasetError> {
        if ctx.tokenizer.is_none() {
            return Ok(None);
        }
        Ok(Some(PromptCounter(Measure::new(ctx)?)))
    }

    /// A conversation's tokens; `None` when it cannot be rendered or encoded.
    pub fn messages(&self, messages: &[Value]) -> Option<u32> {
        self.0.messages(messages).ok()?.count.map(to_u32)
    }

    /// The input tokens of a whole request body: its `messages` (chat), `prompt` (text or
    /// token ids) or `input` (Responses: text or messages).
    pub fn body(&self, body: &Map<String, Value>) -> Option<u32> {
        match body.get("messages").or_else(|| body.get("input")) {
            Some(Value::Array(messages)) => return self.messages(messages),
            Some(Value::String(text)) => return self.text(text),
            _ => {}
        }
        match body.get("prompt")? {
            Value::String(text) => self.text(text),
            Value::Array(items) if items.iter().all(Value::is_u64) => Some(to_u32(items.len())),
            Value::Array(items) => match items.as_slice() {
                [Value::String(text)] => self.text(text),
                _ => None,
            },
            _ => None,
        }
    }

    fn text(&self, text: &str) -> Option<u32> {
        self.0.text(text).ok()?.count.map(to_u32)
    }
}

pub(crate) fn user_message(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

pub(crate) fn system_message(text: &str) -> Value {
    json!({"role": "system", "content": text})
}

/// The text of a message whose content is a string or a list of text parts.
fn message_text(message: &Value) -> Option<&str> {
    match message.get("content")? {
        Value::String(s) => Some(s),
        Value::Array(parts) => parts
            .iter()
            .find_map(|p| p.get("text").and_then(Value::as_str)),
        _ => None,
    }
}

pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(chat: bool) -> (PromptCounter, Arc<Tokenizer>) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
        let tok = Tokenizer::load(&dir).unwrap();
        let ctx = DatasetContext {
            tokenizer: Some(tok.clone()),
            chat,
            ..DatasetContext::default()
        };
        (PromptCounter::new(&ctx).unwrap().unwrap(), tok)
    }

    /// A recorded body is counted as its API's server sees it.
    #[test]
    fn whole_bodies_of_every_api() {
        let (chat, tok) = counter(true);
        let messages = vec![user_message("What is the capital of France?")];
        let body = json!({"model": "m", "messages": messages, "max_tokens": 8});
        let want = tok.count_chat(&messages).unwrap() as u32;
        assert_eq!(chat.body(body.as_object().unwrap()), Some(want));
        let input = json!({"model": "m", "input": messages});
        assert_eq!(chat.body(input.as_object().unwrap()), Some(want));
        let (text, tok) = counter(false);
        let body = json!({"model": "m", "prompt": "The capital of France is"});
        let want = tok.count("The capital of France is", true).unwrap() as u32;
        assert_eq!(text.body(body.as_object().unwrap()), Some(want));
        let ids = json!({"prompt": [1, 2, 3, 4]});
        assert_eq!(text.body(ids.as_object().unwrap()), Some(4));
        let one = json!({"prompt": ["The capital of France is"]});
        assert_eq!(text.body(one.as_object().unwrap()), Some(want));
        assert_eq!(text.body(json!({"model": "m"}).as_object().unwrap()), None);
        let ctx = DatasetContext::default();
        assert!(PromptCounter::new(&ctx).unwrap().is_none(), "no tokenizer");
    }
}
