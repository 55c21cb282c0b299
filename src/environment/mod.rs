//! The environment a suite measured in, collected rather than typed in: the client
//! machine (`client`), what each endpoint's server says about itself (`server`: its
//! self-description routes and its model list's metadata), the accelerators its
//! telemetry exporters name, a launched server's command,
//! and the plan's `labels` for what cannot be read. Owns the record's shape (stored as
//! JSON on the suite), reading the client's facts from `/proc` and `/sys` (under
//! `PERFPLAN_SYSFS_ROOT` for tests), decoding servers' answers (pure), the short lines
//! reports print and the differences `compare` lists. Knows nothing of HTTP, SQLite or
//! plans' types; secrets never enter it (`server::fields` drops secret-looking keys and
//! the caller's redactor hides known secret values).

pub mod client;
pub mod diff;
pub mod server;
mod summary;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use client::ClientFacts;
pub use diff::differences;
pub use server::{ModelFacts, ServerFacts};
pub use summary::{endpoint_line, lines};

/// What a suite measured on: stored as one JSON object on the suite (absent in suites
/// stored before it was recorded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The machine perfplan ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientFacts>,
    /// `[plan] labels`: what cannot be read (`release = "1.8.0-rc2"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Each endpoint of the suite, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, EndpointFacts>,
}

/// One endpoint: its plan labels, and what was read from it once, at its first use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointFacts {
    /// The endpoint's `labels` in the plan.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// What the server said about itself (none when no route answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerFacts>,
    /// The model list's entries, with their metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelFacts>,
    /// The accelerators the endpoint's telemetry exporters name (DCGM's `modelName`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accelerators: Vec<Accelerator>,
    /// The command that started the server, when perfplan launched it, as written (its
    /// `{port}` unfilled, so suites that differ only in the port chosen do not differ;
    /// secrets hidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
}

/// GPUs of one model, as an exporter names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accelerator {
    pub model: String,
    pub count: u32,
}

impl std::fmt::Display for Accelerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} × {}", self.count, self.model)
    }
}

impl Environment {
    /// This machine's facts and the plan's labels; endpoints are added as they are read.
    pub fn collect(labels: BTreeMap<String, String>) -> Environment {
        Environment {
            client: Some(ClientFacts::detect()),
            labels,
            endpoints: BTreeMap::new(),
        }
    }

    /// The record of `endpoint` (its labels kept) with what was read from it.
    pub(crate) fn set_read(&mut self, endpoint: &str, read: EndpointFacts) {
        let entry = self.endpoints.entry(endpoint.to_string()).or_default();
        let labels = std::mem::take(&mut entry.labels);
        *entry = EndpointFacts {
            labels: if read.labels.is_empty() {
                labels
            } else {
                read.labels
            },
            ..read
        };
    }
}
