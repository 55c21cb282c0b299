//! The probe stage: what perfplan asks an endpoint before its first run. The connection
//! test (`GET` of the model list, waiting within a deadline for a server still starting,
//! and the check that it serves the run's model) and the endpoint's self-description for
//! the suite's environment record. Never used during a run.
//! Must not know: the store, the run loop, the engine's load.

pub mod connect;
pub mod describe;

/// Why an endpoint cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("endpoint `{endpoint}`")]
    Control {
        endpoint: String,
        #[source]
        source: crate::control::ControlError,
    },
    #[error("endpoint `{endpoint}` ({url}) is not usable: {message}")]
    Connection {
        endpoint: String,
        url: String,
        message: String,
    },
    #[error("endpoint `{endpoint}` does not serve model `{model}`{}; {url} lists: {}. Set the model's `served_name` to the name the server lists", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(), served.join(", "))]
    ModelNotServed {
        endpoint: String,
        url: String,
        model: String,
        suggestion: Option<String>,
        served: Vec<String>,
    },
}
