//! Tokenizers: loading a HuggingFace tokenizer folder (`tokenizer.json`, `tokenizer_config.json`,
//! optional `chat_template.jinja`), encoding, decoding and counting text, and rendering and
//! counting chat conversations through the model's chat template, the way servers do.
//! Loaded once per suite through [`TokenizerCache`] and shared as `Arc<Tokenizer>`.
//! Knows nothing about plans, datasets or HTTP.

mod cache;
mod config;
mod template;
mod vocab;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

pub use cache::TokenizerCache;
pub use template::ChatTemplate;
pub use vocab::WordPool;

/// Errors of loading a tokenizer or using it.
#[derive(Debug, thiserror::Error)]
pub enum TokenizeError {
    #[error(
        "tokenizer not found at {path}: expected a folder holding tokenizer.json, or a \
         tokenizer.json file; fix the model's `tokenizer` key in the plan"
    )]
    NotFound { path: PathBuf },
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot load the tokenizer {path}: is it a HuggingFace tokenizer.json?")]
    Parse {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },
    #[error("cannot parse {path}")]
    Config {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the chat template of {path} does not compile")]
    TemplateSyntax {
        path: PathBuf,
        #[source]
        source: minijinja::Error,
    },
    #[error(
        "the tokenizer at {path} has no chat template (no `chat_template` in tokenizer_config.json \
         and no chat_template.jinja): add one there, or set `chat_template = \"off\"` on the model \
         to count chat prompts without it"
    )]
    NoChatTemplate { path: PathBuf },
    #[error("rendering the chat template of {path} failed")]
    Render {
        path: PathBuf,
        #[source]
        source: minijinja::Error,
    },
    #[error("encoding text with the tokenizer {path} failed")]
    Encode {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },
    #[error("decoding token ids with the tokenizer {path} failed")]
    Decode {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },
}

/// A token id and the byte range `(start, end)` it covers in the encoded text.
pub(crate) type TokenSpan = (u32, (usize, usize));

/// A loaded tokenizer with its chat template and special tokens. Cheap to share (`Arc`).
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    template: Option<ChatTemplate>,
    special_tokens: Vec<(String, String)>,
    words: OnceLock<WordPool>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("path", &self.path)
            .field("vocab_size", &self.vocab_size())
            .field("chat_template", &self.template.is_some())
            .finish()
    }
}

impl Tokenizer {
    /// Loads a tokenizer folder (`tokenizer.json` + optional `tokenizer_config.json` and
    /// `chat_template.jinja`) or a `tokenizer.json` file (then the config beside it is read
    /// when present).
    pub fn load(path: &Path) -> Result<Arc<Tokenizer>, TokenizeError> {
        let (dir, json_path) = if path.is_dir() {
            (path.to_path_buf(), path.join("tokenizer.json"))
        } else if path.is_file() {
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            (dir, path.to_path_buf())
        } else {
            return Err(TokenizeError::NotFound {
                path: path.to_path_buf(),
            });
        };
        if !json_path.is_file() {
            return Err(TokenizeError::NotFound {
                path: path.to_path_buf(),
            });
        }
        let text = crate::text::read(&json_path).map_err(|source| TokenizeError::Read {
            path: json_path.clone(),
            source,
        })?;
        let inner = tokenizers::Tokenizer::from_bytes(text.as_bytes()).map_err(|source| {
            TokenizeError::Parse {
                path: json_path.clone(),
                source,
            }
        })?;
        let cfg = config::read_folder(&dir)?;
        let template = match cfg.chat_template {
            Some((source, origin)) => Some(ChatTemplate::compile(source, &origin)?),
            None => None,
        };
        Ok(Arc::new(Tokenizer {
            inner,
            path: path.to_path_buf(),
            template,
            special_tokens: cfg.special_tokens,
            words: OnceLock::new(),
        }))
    }

    /// The path it was loaded from (as given).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Token ids of `text`; `add_special_tokens` applies the post-processor (e.g. a BOS).
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, TokenizeError> {
        self.inner
            .encode_fast(text, add_special_tokens)
            .map(|enc| enc.get_ids().to_vec())
            .map_err(|source| self.encode_error(source))
    }

    /// Token ids of `text` with the byte range each token covers in `text`.
    pub(crate) fn encode_with_offsets(
        &self,
        text: &str,
        add_special_tokens: bool,
    ) -> Result<Vec<TokenSpan>, TokenizeError> {
        let enc = self
            .inner
            .encode(text, add_special_tokens)
            .map_err(|source| self.encode_error(source))?;
        Ok(enc
            .get_ids()
            .iter()
            .copied()
            .zip(enc.get_offsets().iter().copied())
            .collect())
    }

    /// Number of tokens of `text`.
    pub fn count(&self, text: &str, add_special_tokens: bool) -> Result<usize, TokenizeError> {
        self.inner
            .encode_fast(text, add_special_tokens)
            .map(|enc| enc.len())
            .map_err(|source| self.encode_error(source))
    }

    /// Text of `ids`, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizeError> {
        self.inner
            .decode(ids, false)
            .map_err(|source| TokenizeError::Decode {
                path: self.path.clone(),
                source,
            })
    }

    /// Whether a chat template was found.
    pub fn has_chat_template(&self) -> bool {
        self.template.is_some()
    }

    pub fn bos_token(&self) -> Option<&str> {
        self.special_token("bos_token")
    }

    pub fn eos_token(&self) -> Option<&str> {
        self.special_token("eos_token")
    }

    /// A special token of `tokenizer_config.json` by key (`"pad_token"`, ...).
    pub(crate) fn special_token(&self, key: &str) -> Option<&str> {
        self.special_tokens
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, text)| text.as_str())
    }

    /// Renders OpenAI-style `messages` through the chat template.
    pub fn render_chat(
        &self,
        messages: &[Value],
        add_generation_prompt: bool,
    ) -> Result<String, TokenizeError> {
        self.render_chat_with(messages, add_generation_prompt, &Map::new())
    }

    /// [`Tokenizer::render_chat`] with extra template variables (a request's
    /// `chat_template_kwargs`, e.g. `enable_thinking`).
    pub fn render_chat_with(
        &self,
        messages: &[Value],
        add_generation_prompt: bool,
        kwargs: &Map<String, Value>,
    ) -> Result<String, TokenizeError> {
        let template = self
            .template
            .as_ref()
            .ok_or_else(|| TokenizeError::NoChatTemplate {
                path: self.path.clone(),
            })?;
        template
            .render(
                messages,
                add_generation_prompt,
                &self.special_tokens,
                kwargs,
            )
            .map_err(|source| TokenizeError::Render {
                path: self.path.clone(),
                source,
            })
    }

    /// Token count of a conversation as a server sees it: rendered with the generation
    /// prompt, then encoded without adding special tokens (the template holds them).
    pub fn count_chat(&self, messages: &[Value]) -> Result<usize, TokenizeError> {
        self.count_chat_with(messages, &Map::new())
    }

    /// [`Tokenizer::count_chat`] with extra template variables.
    pub fn count_chat_with(
        &self,
        messages: &[Value],
        kwargs: &Map<String, Value>,
    ) -> Result<usize, TokenizeError> {
        let text = self.render_chat_with(messages, true, kwargs)?;
        self.count(&text, false)
    }

    /// Token ids of a conversation as a server sees it (see [`Tokenizer::count_chat`]).
    pub fn encode_chat(&self, messages: &[Value]) -> Result<Vec<u32>, TokenizeError> {
        self.encode_chat_with(messages, &Map::new())
    }

    /// [`Tokenizer::encode_chat`] with extra template variables.
    pub(crate) fn encode_chat_with(
        &self,
        messages: &[Value],
        kwargs: &Map<String, Value>,
    ) -> Result<Vec<u32>, TokenizeError> {
        let text = self.render_chat_with(messages, true, kwargs)?;
        self.encode(&text, false)
    }

    /// Whole-word tokens that survive decode → encode unchanged, for random prompts.
    /// Computed once per tokenizer on first use.
    pub fn word_pool(&self) -> &WordPool {
        self.words.get_or_init(|| WordPool::build(&self.inner))
    }

    fn encode_error(&self, source: tokenizers::Error) -> TokenizeError {
        TokenizeError::Encode {
            path: self.path.clone(),
            source,
        }
    }
}
