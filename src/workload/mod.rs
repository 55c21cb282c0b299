//! The workload stage: the requests of a run, as they will be sent. From a planned run
//! and its dataset it builds the request bodies (all at once, or as they are sent for a
//! large or timed run), the arrival schedule of a trace, the conversations of a
//! multi-turn run, the classes of a mix, the sessions and prefix groups, and what each
//! request was meant to be (its target lengths). Its product is a [`PreparedRun`] and the
//! [`traffic::Source`] of each pass, which the suite hands to the engine.
//! Must not know: the store, the run loop (the suite), how a run is measured.

pub(crate) mod conversation;
pub mod explore;
pub(crate) mod golden;
pub(crate) mod mix;
pub mod prepare;
pub(crate) mod produce;
mod public_trace;
pub(crate) mod requests;
pub mod run_terms;
pub mod session;
pub mod share;
pub(crate) mod targets;
pub(crate) mod traffic;
pub(crate) mod turn_inputs;

pub use prepare::{measured_count, PreparedRun};

/// Why a run's requests could not be built.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("cannot load the tokenizer of model `{model}`")]
    Tokenizer {
        model: String,
        #[source]
        source: crate::tokenize::TokenizeError,
    },
    #[error("cannot build the prompts of dataset `{dataset}`")]
    Dataset {
        dataset: String,
        #[source]
        source: crate::dataset::DatasetError,
    },
    #[error("cannot build the body of request {item}")]
    Body {
        item: usize,
        #[source]
        source: crate::api::ApiError,
    },
    #[error(transparent)]
    Template(#[from] crate::request::TemplateError),
    #[error("cannot read the golden requests of [checks]: {first}")]
    Golden { first: String },
    #[error("cannot start the thread that builds a run's requests as they are sent")]
    Thread(#[source] std::io::Error),
}

/// Where `--debug` writes every request body as it is built (the suite's log).
pub trait RequestLog: Send + Sync {
    /// Whether bodies are logged at all.
    fn debug(&self) -> bool;
    /// The bodies of `requests` of run `run_id`, before they are sent.
    fn requests(&self, run_id: &str, requests: &[crate::engine::PreparedRequest]);
}
