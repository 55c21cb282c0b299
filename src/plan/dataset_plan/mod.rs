//! `DatasetPlan`: a dataset's settings typed per kind, every default resolved and every
//! required key present, made in one place (`DatasetPlan::from_spec`) from the
//! `DatasetSpec` as written. The planner makes one per run (`RunSpec::dataset`); the
//! request sources (`dataset`) match on its variant and read no optional key. It lives
//! here, beside the spec, because both the planner and `dataset` (which the planner
//! imports) need it, and validation reports the same missing keys it refuses.

use std::collections::BTreeMap;
use std::time::Duration;

use super::dataset_keys::{keys_for, misplaced_keys};
pub use super::prefix_groups::PrefixGroups;
use super::spec::{DatasetKind, DatasetSpec, InputLenMode, PrefixRole, TokenRange};
pub use trace_format::{TraceFormat, DEFAULT_BLOCK_SIZE};

/// The user turn's length of `random_multi_turn` when `user_tokens` is not set.
pub(crate) const DEFAULT_USER_TOKENS: u32 = 64;
/// The image format of `random_images` when `format` is not set.
pub(crate) const DEFAULT_IMAGE_FORMAT: &str = "png";

/// A dataset's settings for one run, by kind.
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetPlan {
    /// Token-exact random prompts; `prefix_tokens` of them shared by the requests of each
    /// prefix group (0: none).
    Random {
        input: TokenRange,
        prefix_tokens: u32,
        groups: PrefixGroups,
    },
    /// One fixed prompt, inline or `"@path"`.
    Prompt {
        text: String,
        select: FileSelect,
    },
    Lines {
        path: String,
        select: FileSelect,
    },
    /// `field`: the field holding the prompt (unset: the object's own shape decides).
    Jsonl {
        path: String,
        field: Option<String>,
        select: FileSelect,
    },
    Sharegpt {
        path: String,
        select: FileSelect,
    },
    RandomMultiTurn(MultiTurn),
    /// Conversations from a file, cut to `max_turns` turns when set (`turns`' upper bound).
    Conversations {
        path: String,
        think_time: Duration,
        max_turns: Option<u32>,
        /// Send each answer's reasoning back with it (`echo_reasoning`).
        echo_reasoning: bool,
    },
    /// Random conversations that offer tools and answer each tool call with a mocked
    /// result, continuing the turn up to `max_tool_rounds` times.
    ToolCalls(MultiTurn, ToolLoop),
    Trace(TracePlan),
    RandomImages {
        width: u32,
        height: u32,
        /// As written (`png`, `jpeg`); checked when the images are made.
        format: String,
        images_per_request: u32,
        /// The text part's length; unset: a fixed caption.
        text_tokens: Option<TokenRange>,
    },
    Images {
        path: String,
        /// Sent instead of every caption.
        text: Option<String>,
        images_per_request: u32,
        text_tokens: Option<TokenRange>,
    },
    RandomEmbedding {
        input: TokenRange,
        batch_size: u32,
    },
    Embedding {
        path: String,
        batch_size: u32,
    },
    RandomRerank {
        query: TokenRange,
        /// Unset: the source's own default, which differs today between the token-exact
        /// source (5, with a tokenizer) and the approximate one (10): kept as it was.
        num_documents: Option<u32>,
        document_length_ratio: f64,
    },
    /// `num_documents` cuts each record's documents; unset: all of them.
    Rerank {
        path: String,
        num_documents: Option<u32>,
    },
    /// Weighted workload classes. `from_spec` gives one with no classes: the planner
    /// resolves each class's dataset by name (`planner::mix`).
    Mix(MixPlan),
}

/// `mix`: the classes, in the order written, each request drawn from one by weight.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MixPlan {
    pub classes: Vec<MixClassPlan>,
    /// How requests get their class (by weight, or round robin).
    pub assign: crate::plan::mix_spec::MixAssign,
}

/// One class of a mix: its name, its weight and its dataset's typed settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MixClassPlan {
    pub name: String,
    pub weight: f64,
    pub dataset: DatasetPlan,
}

/// The length rules of the file kinds (`prompt`, `lines`, `jsonl`, `sharegpt`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileSelect {
    pub target_input_len: Option<u32>,
    pub prefix_file: Option<String>,
    /// Where the prefix file's text goes (default: a system message).
    pub prefix_role: PrefixRole,
    /// What `target_input_len` does to shorter prompts (default: keep them).
    pub input_len_mode: InputLenMode,
    pub min_input_tokens: Option<u32>,
    pub max_input_tokens: Option<u32>,
}

/// `random_multi_turn`.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiTurn {
    pub turns: TokenRange,
    /// Default `DEFAULT_USER_TOKENS`.
    pub user_tokens: TokenRange,
    /// Each turn's output limit; unset: the request's own.
    pub assistant_tokens: Option<TokenRange>,
    /// Pause between an answer and the next turn (default none).
    pub think_time: Duration,
    /// Send each answer's reasoning back with it (`echo_reasoning`, default false).
    pub echo_reasoning: bool,
    /// A system message of this many tokens shared by every conversation (0: none).
    pub prefix_tokens: u32,
}

/// `tool_calls`: the tools offered and how their calls are answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolLoop {
    /// The tools file as written (relative to the plan); `None`: the built-in tools.
    pub tools: Option<String>,
    /// Most tool rounds per turn (default `DEFAULT_MAX_TOOL_ROUNDS`).
    pub max_tool_rounds: u32,
    /// Length of a mocked tool result without a `result` text (default
    /// `DEFAULT_TOOL_RESULT_TOKENS`).
    pub tool_result_tokens: TokenRange,
}

/// `max_tool_rounds` when not set.
pub(crate) const DEFAULT_MAX_TOOL_ROUNDS: u32 = 3;
/// `tool_result_tokens` when not set.
pub(crate) const DEFAULT_TOOL_RESULT_TOKENS: u32 = 32;

/// `trace`.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePlan {
    pub path: String,
    /// Replay speed-up (default 1).
    pub speed: f64,
    /// Replaces every recorded model.
    pub model_override: Option<String>,
    pub model_mapping: BTreeMap<String, String>,
    /// Send each record's `completion_tokens` as its output limit (default false; true
    /// for the public formats, whose records carry nothing else of the answer).
    pub match_output_length: bool,
    /// The file's format (`format`, default `perfplan`).
    pub format: TraceFormat,
    /// `mooncake`: tokens per `hash_ids` block (default 512).
    pub block_size: u32,
    /// Records kept: those at or after `from` and before `to`, offsets from the
    /// trace's first record (before `speed`).
    pub from: Duration,
    pub to: Option<Duration>,
}

/// Why a `DatasetSpec` makes no `DatasetPlan`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DatasetPlanError {
    #[error("dataset kind `{kind}` needs the key `{key}`")]
    MissingKey { kind: String, key: &'static str },
    #[error(
        "dataset: the key `{key}` does not apply to dataset kind `{kind}` (it takes: {takes})"
    )]
    NotApplicable {
        kind: String,
        key: String,
        takes: String,
    },
}

/// The kind as written in a plan (`random_multi_turn`).
pub fn kind_name(kind: DatasetKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_else(|| format!("{kind:?}"))
}

impl DatasetPlan {
    /// The typed settings of `spec`: a key its kind does not take, or a required key it
    /// lacks, is an error (validation reports both, located, before any run).
    pub fn from_spec(spec: &DatasetSpec) -> Result<DatasetPlan, DatasetPlanError> {
        let kind = kind_name(spec.kind);
        if let Some(key) = misplaced_keys(spec).into_iter().next() {
            return Err(DatasetPlanError::NotApplicable {
                takes: keys_for(spec.kind).join(", "),
                kind,
                key,
            });
        }
        let mut missing = Vec::new();
        match build(spec, &mut missing) {
            Some(plan) => Ok(plan),
            None => Err(DatasetPlanError::MissingKey {
                kind,
                key: missing.first().copied().unwrap_or("kind"),
            }),
        }
    }

    /// The kind these settings are for.
    pub fn kind(&self) -> DatasetKind {
        match self {
            DatasetPlan::Random { .. } => DatasetKind::Random,
            DatasetPlan::Prompt { .. } => DatasetKind::Prompt,
            DatasetPlan::Lines { .. } => DatasetKind::Lines,
            DatasetPlan::Jsonl { .. } => DatasetKind::Jsonl,
            DatasetPlan::Sharegpt { .. } => DatasetKind::Sharegpt,
            DatasetPlan::RandomMultiTurn(_) => DatasetKind::RandomMultiTurn,
            DatasetPlan::Conversations { .. } => DatasetKind::Conversations,
            DatasetPlan::ToolCalls(..) => DatasetKind::ToolCalls,
            DatasetPlan::Trace(_) => DatasetKind::Trace,
            DatasetPlan::RandomImages { .. } => DatasetKind::RandomImages,
            DatasetPlan::Images { .. } => DatasetKind::Images,
            DatasetPlan::RandomEmbedding { .. } => DatasetKind::RandomEmbedding,
            DatasetPlan::Embedding { .. } => DatasetKind::Embedding,
            DatasetPlan::RandomRerank { .. } => DatasetKind::RandomRerank,
            DatasetPlan::Rerank { .. } => DatasetKind::Rerank,
            DatasetPlan::Mix(_) => DatasetKind::Mix,
        }
    }

    /// The file kinds' length rules.
    pub fn select(&self) -> Option<&FileSelect> {
        match self {
            DatasetPlan::Prompt { select, .. }
            | DatasetPlan::Lines { select, .. }
            | DatasetPlan::Jsonl { select, .. }
            | DatasetPlan::Sharegpt { select, .. } => Some(select),
            _ => None,
        }
    }

    /// The classes of a mix (`None` for every other kind).
    pub fn mix(&self) -> Option<&MixPlan> {
        match self {
            DatasetPlan::Mix(mix) => Some(mix),
            _ => None,
        }
    }

    /// What in these settings needs the model's tokenizer (exact token lengths), if anything.
    pub fn needs_tokenizer(&self) -> Option<&'static str> {
        let format = match self {
            DatasetPlan::Trace(t) => Some(t.format),
            _ => None,
        };
        let none = FileSelect::default();
        tokenizer_need(self.kind(), format, self.select().unwrap_or(&none))
    }
}

/// `DatasetPlan::needs_tokenizer` of the settings as written (complete or not), for
/// validation: the same rule.
pub(crate) fn spec_needs_tokenizer(spec: &DatasetSpec) -> Option<&'static str> {
    let format = spec.format.as_deref().and_then(TraceFormat::parse);
    tokenizer_need(spec.kind, format, &file_select(spec))
}

/// The one rule of what needs exact token counts: kind `random`, a public trace (its
/// prompts are synthesised), or a length rule. (random_embedding and random_rerank fall
/// back to approximate word counts.)
fn tokenizer_need(
    kind: DatasetKind,
    format: Option<TraceFormat>,
    select: &FileSelect,
) -> Option<&'static str> {
    let public = kind == DatasetKind::Trace && format.is_some_and(TraceFormat::synthesized);
    let by_kind = match kind {
        DatasetKind::Random => Some("dataset kind `random`"),
        _ if public => Some(TraceFormat::SYNTHESIZED),
        _ => None,
    };
    by_kind.or_else(|| select.needs_tokenizer())
}

impl FileSelect {
    /// The first length rule set that counts tokens, if any.
    pub fn needs_tokenizer(&self) -> Option<&'static str> {
        [
            ("`target_input_len`", self.target_input_len.is_some()),
            ("`min_input_tokens`", self.min_input_tokens.is_some()),
            ("`max_input_tokens`", self.max_input_tokens.is_some()),
            ("`prefix_file`", self.prefix_file.is_some()),
        ]
        .into_iter()
        .find(|(_, set)| *set)
        .map(|(what, _)| what)
    }
}

/// The keys `spec`'s kind requires and it lacks (all of them, in the kind's order).
pub(crate) fn missing_keys(spec: &DatasetSpec) -> Vec<&'static str> {
    let mut missing = Vec::new();
    build(spec, &mut missing);
    missing
}

/// Takes a required key, noting it in `missing` when absent.
fn need<T: Clone>(
    value: &Option<T>,
    key: &'static str,
    missing: &mut Vec<&'static str>,
) -> Option<T> {
    if value.is_none() {
        missing.push(key);
    }
    value.clone()
}

/// The one statement of which keys each kind requires and what each default is: the
/// text kinds here, the traffic kinds (trace, images, embeddings, rerank) in `traffic`.
fn build(s: &DatasetSpec, missing: &mut Vec<&'static str>) -> Option<DatasetPlan> {
    let path = |missing: &mut Vec<&'static str>| need(&s.path, "path", missing);
    let think_time = s.think_time.map_or(Duration::ZERO, |d| d.0);
    Some(match s.kind {
        DatasetKind::Random => DatasetPlan::Random {
            input: need(&s.input_tokens, "input_tokens", missing)?,
            prefix_tokens: s.prefix_tokens.unwrap_or(0),
            groups: PrefixGroups::of(s),
        },
        DatasetKind::Prompt => DatasetPlan::Prompt {
            text: need(&s.text, "text", missing)?,
            select: file_select(s),
        },
        DatasetKind::Lines => DatasetPlan::Lines {
            path: path(missing)?,
            select: file_select(s),
        },
        DatasetKind::Jsonl => DatasetPlan::Jsonl {
            path: path(missing)?,
            field: s.field.clone(),
            select: file_select(s),
        },
        DatasetKind::Sharegpt => DatasetPlan::Sharegpt {
            path: path(missing)?,
            select: file_select(s),
        },
        DatasetKind::RandomMultiTurn => DatasetPlan::RandomMultiTurn(multi_turn(s, missing)?),
        DatasetKind::ToolCalls => DatasetPlan::ToolCalls(
            multi_turn(s, missing)?,
            ToolLoop {
                tools: s.tools.clone(),
                max_tool_rounds: s.max_tool_rounds.unwrap_or(DEFAULT_MAX_TOOL_ROUNDS),
                tool_result_tokens: s
                    .tool_result_tokens
                    .unwrap_or(TokenRange::Fixed(DEFAULT_TOOL_RESULT_TOKENS)),
            },
        ),
        DatasetKind::Conversations => DatasetPlan::Conversations {
            path: path(missing)?,
            think_time,
            max_turns: s.turns.map(TokenRange::max),
            echo_reasoning: s.echo_reasoning == Some(true),
        },
        DatasetKind::Mix => {
            need(&s.mix, "mix", missing)?;
            DatasetPlan::Mix(MixPlan::default())
        }
        _ => return traffic(s, missing),
    })
}

/// The random conversations of `random_multi_turn` and `tool_calls`.
fn multi_turn(s: &DatasetSpec, missing: &mut Vec<&'static str>) -> Option<MultiTurn> {
    Some(MultiTurn {
        turns: need(&s.turns, "turns", missing)?,
        user_tokens: s
            .user_tokens
            .unwrap_or(TokenRange::Fixed(DEFAULT_USER_TOKENS)),
        assistant_tokens: s.assistant_tokens,
        think_time: s.think_time.map_or(Duration::ZERO, |d| d.0),
        echo_reasoning: s.echo_reasoning == Some(true),
        prefix_tokens: s.prefix_tokens.unwrap_or(0),
    })
}

/// `build` of the traffic kinds.
fn traffic(s: &DatasetSpec, missing: &mut Vec<&'static str>) -> Option<DatasetPlan> {
    let path = |missing: &mut Vec<&'static str>| need(&s.path, "path", missing);
    // Validation refuses an unknown format name before any run.
    let format = s
        .format
        .as_deref()
        .and_then(TraceFormat::parse)
        .unwrap_or_default();
    Some(match s.kind {
        DatasetKind::Trace => DatasetPlan::Trace(TracePlan {
            path: path(missing)?,
            speed: s.speed.unwrap_or(1.0),
            model_override: s.model_override.clone(),
            model_mapping: s.model_mapping.clone(),
            match_output_length: s.match_output_length.unwrap_or(format.synthesized()),
            format,
            block_size: s.block_size.unwrap_or(DEFAULT_BLOCK_SIZE),
            from: s.from.map_or(Duration::ZERO, |d| d.0),
            to: s.to.map(|d| d.0),
        }),
        DatasetKind::RandomImages => {
            // Both keys are looked at before either is required, so both are reported.
            let (width, height) = (
                need(&s.width, "width", missing),
                need(&s.height, "height", missing),
            );
            DatasetPlan::RandomImages {
                width: width?,
                height: height?,
                format: s
                    .format
                    .clone()
                    .unwrap_or_else(|| DEFAULT_IMAGE_FORMAT.to_string()),
                images_per_request: s.images_per_request.unwrap_or(1),
                text_tokens: s.text_tokens,
            }
        }
        DatasetKind::Images => DatasetPlan::Images {
            path: path(missing)?,
            text: s.text.clone(),
            images_per_request: s.images_per_request.unwrap_or(1),
            text_tokens: s.text_tokens,
        },
        DatasetKind::RandomEmbedding => DatasetPlan::RandomEmbedding {
            input: need(&s.input_tokens, "input_tokens", missing)?,
            batch_size: s.batch_size.unwrap_or(1),
        },
        DatasetKind::Embedding => DatasetPlan::Embedding {
            path: path(missing)?,
            batch_size: s.batch_size.unwrap_or(1),
        },
        DatasetKind::RandomRerank => DatasetPlan::RandomRerank {
            query: need(&s.query_tokens, "query_tokens", missing)?,
            num_documents: s.num_documents,
            document_length_ratio: s.document_length_ratio.unwrap_or(1.0),
        },
        DatasetKind::Rerank => DatasetPlan::Rerank {
            path: path(missing)?,
            num_documents: s.num_documents,
        },
        // The text kinds, which `build` states (listed so that a new kind must be placed).
        DatasetKind::Random
        | DatasetKind::Prompt
        | DatasetKind::Lines
        | DatasetKind::Jsonl
        | DatasetKind::Sharegpt
        | DatasetKind::RandomMultiTurn
        | DatasetKind::Conversations
        | DatasetKind::ToolCalls
        | DatasetKind::Mix => return build(s, missing),
    })
}

fn file_select(s: &DatasetSpec) -> FileSelect {
    FileSelect {
        target_input_len: s.target_input_len,
        prefix_file: s.prefix_file.clone(),
        prefix_role: s.prefix_role.unwrap_or_default(),
        input_len_mode: s.input_len_mode.unwrap_or_default(),
        min_input_tokens: s.min_input_tokens,
        max_input_tokens: s.max_input_tokens,
    }
}

mod trace_format;

#[cfg(test)]
mod tests;
