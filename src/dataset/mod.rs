//! Request sources: turns a run's typed dataset settings (`plan::DatasetPlan`, one
//! variant per kind, made by the planner) into the prompts of one run, exactly as long
//! as the plan says (counted the way the server will count them) and deterministic from the
//! run's seed. One source per file: `random`, `random_batch` (`random_embedding`,
//! `random_rerank`), `batch_files` (`embedding`, `rerank`), `fixed` (kind `prompt`), `lines`,
//! `jsonl`, `sharegpt`; `select` applies
//! length filters, `target_input_len` and `prefix_file` to the file kinds. Knows nothing about HTTP, the engine or the matrix: the planner passes the
//! seed (already mixed with the run) and the request count.

mod batch_files;
pub mod check;
mod fit;
mod fixed;
pub mod golden;
mod jsonl;
mod lines;
mod measure;
pub mod mix;
mod prefix_file;
mod prefix_fill;
mod prefix_groups;
mod random;
mod random_batch;
mod select;
mod sharegpt;
mod source;
mod split;
mod stream;
mod tar_shards;
// The traffic kinds.
mod embedding;
pub mod image_codec;
mod image_header;
mod images;
pub mod multi_turn;
mod rerank;
pub mod tool_calls;
pub mod trace;
mod trace_formats;
pub mod trace_headers;
pub mod trace_lengths;
mod words;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::api::Prompt;
use crate::plan::spec::ChatTemplateMode;
use crate::plan::DatasetPlan;
use crate::tokenize::{TokenizeError, Tokenizer};

pub use crate::plan::dataset_keys::{keys_for, misplaced_keys};
pub use crate::plan::dataset_plan::kind_name;
pub use measure::PromptCounter;
pub use prefix_groups::{group_of, Sharing};
pub use stream::PromptStream;
pub use trace_lengths::TraceSharing;

/// What a dataset needs to know about the run it feeds.
#[derive(Debug, Clone, Default)]
pub struct DatasetContext {
    /// The plan file's folder: relative dataset paths start here.
    pub base_dir: PathBuf,
    /// The model's tokenizer, when the plan names one.
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Text prompts go to a chat API (counted through the chat template); else they are raw
    /// completions text.
    pub chat: bool,
    /// Prompts become token ids for `/v1/completions` (no chat template). Wins over `chat`.
    pub tokenize_prompt: bool,
    /// Whether chat prompts are counted through the model's chat template.
    pub chat_template: ChatTemplateMode,
    /// Already mixed by the planner: identical for runs that differ only by endpoint and for
    /// a warm run's priming pass.
    pub seed: u64,
    /// The first item to build: `materialize` builds items `first .. first + count`, each
    /// the same whatever `first` and `count` are (see `PromptStream`).
    pub first: usize,
    /// Requests needed.
    pub count: usize,
    /// Extra chat-template variables, as the run sends them in `chat_template_kwargs`
    /// (e.g. `enable_thinking = false`), so that client counts match the server's.
    pub template_kwargs: Map<String, Value>,
    /// A mix: each class's own context (its seed, and its model's tokenizer and chat
    /// template), in the order of the mix's classes; empty for every other kind.
    pub classes: Vec<DatasetContext>,
}

/// One request's input, with its lengths.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptItem {
    pub prompt: Prompt,
    /// The length the plan asked for, when it asked for one.
    pub target_input_tokens: Option<u32>,
    /// The length counted client-side as the server will see it (template included in chat).
    pub client_input_tokens: Option<u32>,
    /// The recorded answer length (ShareGPT), usable as the request's output length.
    pub output_tokens: Option<u32>,
    /// A mix: the class (its index in the mix) the item was drawn from.
    pub class: Option<u16>,
}

/// How well the prompts met their targets, and what the sources held.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatasetStats {
    /// Items with a target length.
    pub targeted: usize,
    /// Items whose client count differs from their target.
    pub missed_target: usize,
    /// Largest |client count − target|.
    pub max_abs_miss: u32,
    /// Usable prompts found in the source (before length filters).
    pub source_prompts: usize,
    /// Source prompts removed by `min_input_tokens` / `max_input_tokens` / `input_len_mode = "drop"`.
    pub filtered_out: usize,
    /// Distinct prompts among the items (fewer than the items when a file was cycled).
    pub distinct_prompts: usize,
}

/// The prompts of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Materialized {
    pub items: Vec<PromptItem>,
    /// Things a person should know (tiled prefix file, prompts repeated, no chat template).
    pub warnings: Vec<String>,
    pub stats: DatasetStats,
}

/// Errors of building a run's prompts. Each names the file, line or key at fault.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{what} needs the model's tokenizer: set `tokenizer` on the model in the plan")]
    NeedsTokenizer { what: String },
    /// Settings that make no typed `DatasetPlan` (a required key missing, a key of
    /// another kind): validation refuses them before any run.
    #[error(transparent)]
    Settings(#[from] crate::plan::DatasetPlanError),
    #[error("dataset: {0}")]
    Invalid(String),
    #[error("dataset kind `{kind}` is not supported yet")]
    NotSupported { kind: String },
    #[error("cannot read the dataset file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the dataset file {path} is empty: it holds no prompt")]
    Empty { path: PathBuf },
    #[error("{path}:{line}: malformed JSON")]
    Json {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path}:{line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}:{line}")]
    At {
        path: PathBuf,
        line: usize,
        #[source]
        source: Box<DatasetError>,
    },
    #[error("no prompt of {path} is left after the length filters ({detail})")]
    AllFiltered { path: PathBuf, detail: String },
    #[error("counting tokens failed")]
    Tokenize(#[from] TokenizeError),
}

impl DatasetContext {
    /// The items to build: `first .. first + count`.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.first..self.first.saturating_add(self.count)
    }

    /// One past the last item built.
    pub fn end(&self) -> usize {
        self.first.saturating_add(self.count)
    }
}

/// Builds the `ctx.count` prompts of one run from `plan`, from item `ctx.first` on.
pub fn materialize(plan: &DatasetPlan, ctx: &DatasetContext) -> Result<Materialized, DatasetError> {
    // Random embedding/rerank texts are exact with a tokenizer, approximate without one.
    let exact = ctx.tokenizer.is_some();
    if let DatasetPlan::Mix(mix) = plan {
        return mix::materialize(mix, ctx);
    }
    match *plan {
        DatasetPlan::RandomEmbedding { input, batch_size } if exact => {
            return random_batch::embedding(input, batch_size, ctx)
        }
        DatasetPlan::RandomRerank {
            query,
            num_documents,
            document_length_ratio,
        } if exact => {
            return random_batch::rerank(query, num_documents, document_length_ratio, ctx)
        }
        DatasetPlan::RandomEmbedding { input, batch_size } => {
            return embedding::random(input, batch_size, ctx)
        }
        DatasetPlan::RandomRerank {
            query,
            num_documents,
            document_length_ratio,
        } => return rerank::random(query, num_documents, document_length_ratio, ctx),
        DatasetPlan::Embedding {
            ref path,
            batch_size,
        } => return batch_files::embedding(path, batch_size, ctx),
        DatasetPlan::Rerank {
            ref path,
            num_documents,
        } => return batch_files::rerank(path, num_documents, ctx),
        _ => {}
    }
    let measure = measure::Measure::new(ctx)?;
    let mut out = prompts(plan, ctx, &measure)?;
    if let Some(warning) = measure.warning() {
        out.warnings.insert(0, warning);
    }
    Ok(out)
}

/// What a run's prompts share as the server sees them, for the planned hit ratio: one
/// dataset's `Sharing`, or each class's of a mix (request `i`'s class by the mix's draw,
/// its group by its index within its class).
#[derive(Debug, Clone, PartialEq)]
pub enum RunSharing {
    One(Sharing),
    Mix {
        draw: mix::ClassDraw,
        classes: Vec<Sharing>,
    },
    /// A public trace's: what each request shares with those before it, counted as its
    /// prompts were built.
    Trace(TraceSharing),
}

/// What the prompts of `plan` share as the server sees them: `Some` for kind `random`,
/// whose sharing perfplan builds, and for a mix of `random` classes; `None` for every
/// other kind, and for a mix with a class of another kind (its share is not planned).
pub fn sharing(
    plan: &DatasetPlan,
    ctx: &DatasetContext,
) -> Result<Option<RunSharing>, DatasetError> {
    let DatasetPlan::Mix(mix) = plan else {
        return Ok(one_sharing(plan, ctx)?.map(RunSharing::One));
    };
    if mix.classes.len() != ctx.classes.len() {
        return Ok(None);
    }
    let mut classes = Vec::with_capacity(mix.classes.len());
    for (class, class_ctx) in mix.classes.iter().zip(&ctx.classes) {
        match one_sharing(&class.dataset, class_ctx)? {
            Some(s) => classes.push(s),
            None => return Ok(None),
        }
    }
    Ok(Some(RunSharing::Mix {
        draw: mix::ClassDraw::new(mix, ctx.seed),
        classes,
    }))
}

fn one_sharing(plan: &DatasetPlan, ctx: &DatasetContext) -> Result<Option<Sharing>, DatasetError> {
    let DatasetPlan::Random {
        prefix_tokens,
        groups,
        ..
    } = plan
    else {
        return Ok(None);
    };
    let measure = measure::Measure::new(ctx)?;
    prefix_groups::sharing(*prefix_tokens, groups, ctx.seed, &measure).map(Some)
}

/// The kinds whose prompts are measured as the server counts them.
fn prompts(
    plan: &DatasetPlan,
    ctx: &DatasetContext,
    measure: &measure::Measure,
) -> Result<Materialized, DatasetError> {
    let shaped = |select, source| select::materialize(select, ctx, measure, source);
    match plan {
        DatasetPlan::Random {
            input,
            prefix_tokens,
            groups,
        } => random::materialize(*input, (*prefix_tokens, groups), ctx, measure),
        DatasetPlan::Prompt { text, select } => shaped(select, fixed::read(text, ctx)?),
        DatasetPlan::Lines { path, select } => shaped(select, lines::read(path, ctx)?),
        DatasetPlan::Jsonl {
            path,
            field,
            select,
        } => shaped(select, jsonl::read(path, field.as_deref(), ctx)?),
        DatasetPlan::Sharegpt { path, select } => shaped(select, sharegpt::read(path, ctx)?),
        DatasetPlan::RandomImages {
            width,
            height,
            ref format,
            images_per_request,
            text_tokens,
        } => images::random(
            (*width, *height),
            format,
            images::Captions {
                images_per_request: *images_per_request,
                text_tokens: *text_tokens,
            },
            ctx,
        ),
        DatasetPlan::Images {
            path,
            text,
            images_per_request,
            text_tokens,
        } => images::files(
            path,
            text.as_deref(),
            images::Captions {
                images_per_request: *images_per_request,
                text_tokens: *text_tokens,
            },
            ctx,
        ),
        other => Err(DatasetError::NotSupported {
            kind: kind_name(other.kind()),
        }),
    }
}
