//! How an endpoint is reached, as the plan writes it: `paths` (a route per API that
//! replaces the default one) and `tls` (a private CA, or no verification), with their
//! checks. The URL rule itself and reading CA files belong to `control`; this file only
//! reports where the plan breaks them.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diag::Diagnostic;
use super::node::{Node, Step};
use super::spec::{EndpointSpec, PlanSpec};
use crate::control;

/// `paths`: the route of an API when the server does not use the usual one. A path
/// starting with `/` is taken from the host's root (`/compatible-api/v1/reranks`); a
/// relative one (`v2/rerank`) is joined to `base_url` (a trailing `/v1` dropped once)
/// like the default routes; a full `http(s)://` URL is used as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathsSpec {
    /// Default `/v1/chat/completions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    /// Default `/v1/completions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<String>,
    /// Default `/v1/responses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<String>,
    /// Default `/v1/embeddings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<String>,
    /// Default `/v1/rerank` (Cohere: `/v2/rerank`, TEI: `/rerank`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<String>,
    /// The model list of the connection test, `check` and readiness; default `/v1/models`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<String>,
}

impl PathsSpec {
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// The overrides set, as `(key, value)`, keys as in the plan.
    pub fn entries(&self) -> Vec<(&'static str, &str)> {
        [
            ("chat", &self.chat),
            ("completions", &self.completions),
            ("responses", &self.responses),
            ("embeddings", &self.embeddings),
            ("rerank", &self.rerank),
            ("models", &self.models),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }
}

/// `tls`: how the server's certificate is checked (by default against the built-in roots),
/// and the client certificate perfplan presents to a server that asks for one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// PEM file of CA certificates to trust besides the built-in roots (a private CA or a
    /// self-signed server), relative to the plan's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Accept any certificate (encrypted, but the server is not verified); a warning.
    #[serde(default)]
    pub insecure: bool,
    /// PEM file of the client certificate (its chain, the client's own first) for a server
    /// that asks for one (mutual TLS), relative to the plan's folder; needs `key_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
    /// PEM file of `cert_file`'s private key (PKCS#8, PKCS#1 or SEC1), relative to the
    /// plan's folder; needs `cert_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
}

fn key(path: &[&str]) -> Vec<Step> {
    path.iter().map(|s| Step::Key(s.to_string())).collect()
}

/// Whether any request of the endpoint goes over https (its base URL or an override).
fn uses_https(ep: &EndpointSpec) -> bool {
    ep.base_url.starts_with("https://")
        || ep.urls.iter().any(|u| u.starts_with("https://"))
        || ep
            .paths
            .entries()
            .iter()
            .any(|(_, v)| v.starts_with("https://"))
}

/// Problems of `paths`, `tls` and the base URL's form, located.
pub fn check(spec: &PlanSpec, tree: &Node) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for (name, ep) in &spec.endpoints {
        let urls =
            std::iter::once((&ep.base_url, "base_url")).chain(ep.urls.iter().map(|u| (u, "urls")));
        for (url, field) in urls {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                continue;
            }
            // `{port}` is filled when the server is launched; any port checks the form.
            let filled = url.replace("{port}", "1");
            if let Err(e) = control::Urls::new(&filled, &[]) {
                let at = tree.value_span(&key(&["endpoints", name, field]));
                let text = control::chain(&e).replace(&filled, url);
                diags.push(Diagnostic::error(format!("endpoint `{name}`: {text}"), at));
            }
        }
        for (api, value) in ep.paths.entries() {
            if let Err(e) = control::urls::check_override(value) {
                let at = tree.value_span(&key(&["endpoints", name, "paths", api]));
                diags.push(
                    Diagnostic::error(
                        format!("endpoint `{name}`: paths.{api}: {}", control::chain(&e)),
                        at,
                    )
                    .with_help("write a path (\"/v2/rerank\" from the host's root, \"v2/rerank\" under base_url) or an http(s):// URL"),
                );
            }
        }
        if let Some(tls) = &ep.tls {
            diags.extend(tls_problems(name, ep, tls, tree));
        }
    }
    diags
}

fn tls_problems(name: &str, ep: &EndpointSpec, tls: &TlsSpec, tree: &Node) -> Vec<Diagnostic> {
    let at = |k: &str| Some(tree.locate(&key(&["endpoints", name, "tls", k])));
    if !uses_https(ep) {
        return vec![Diagnostic::error(
            format!("endpoint `{name}`: `tls` has no effect: no request of it uses https://"),
            Some(tree.locate(&key(&["endpoints", name, "tls"]))),
        )
        .with_help("remove `tls`, or use an https:// base_url")];
    }
    let mut diags = Vec::new();
    if tls.insecure && tls.ca_file.is_some() {
        diags.push(
            Diagnostic::error(
                format!(
                    "endpoint `{name}`: `tls.ca_file` has no effect with `tls.insecure = true`"
                ),
                at("ca_file"),
            )
            .with_help("remove one of them: with `ca_file` the certificate is verified"),
        );
    } else if tls.insecure {
        diags.push(
            Diagnostic::warning(
                format!(
                    "endpoint `{name}`: tls.insecure = true: the server's certificate is not \
                     verified, so anyone on the way could answer in its place"
                ),
                at("insecure"),
            )
            .with_help("trust the server's CA with `tls.ca_file` instead"),
        );
    }
    if tls.cert_file.is_some() != tls.key_file.is_some() {
        let (set, missing) = match tls.cert_file {
            Some(_) => ("cert_file", "key_file"),
            None => ("key_file", "cert_file"),
        };
        diags.push(
            Diagnostic::error(
                format!("endpoint `{name}`: `tls.{set}` needs `tls.{missing}`"),
                at(set),
            )
            .with_help("a client certificate is a certificate file and its key file: set both"),
        );
    }
    diags
}

/// A `tls` file (`ca_file`, `cert_file`, `key_file`) that is missing or holds no
/// certificate or key, located. Paths are relative to the plan's folder.
pub(crate) fn check_files(spec: &PlanSpec, tree: &Node, base_dir: &Path) -> Vec<Diagnostic> {
    type Reader = fn(&Path) -> Result<(), control::TlsError>;
    let readers: [(&str, Reader, &str); 3] = [
        (
            "ca_file",
            |p| control::tls::read_ca_file(p).map(drop),
            "ca_file is a PEM file of CA certificates, relative to the plan file's folder",
        ),
        (
            "cert_file",
            |p| control::tls::read_cert_file(p).map(drop),
            "cert_file is a PEM file of the client's certificate chain, relative to the plan file's folder",
        ),
        (
            "key_file",
            |p| control::tls::read_key_file(p).map(drop),
            "key_file is a PEM file of the client certificate's private key, relative to the plan file's folder",
        ),
    ];
    let mut diags = Vec::new();
    for (name, ep) in &spec.endpoints {
        let Some(tls) = &ep.tls else { continue };
        let files = [&tls.ca_file, &tls.cert_file, &tls.key_file];
        for ((field, read, help), file) in readers.iter().zip(files) {
            let Some(file) = file.as_deref() else {
                continue;
            };
            if let Err(e) = read(&base_dir.join(file)) {
                diags.push(file_error(tree, (name, field), &e).with_help(*help));
            }
        }
        if let (Some(cert), Some(key_file)) = (&tls.cert_file, &tls.key_file) {
            let (cert, key_path) = (base_dir.join(cert), base_dir.join(key_file));
            if let Err(e @ control::TlsError::Identity { .. }) =
                control::tls_config::client_identity(&cert, &key_path)
            {
                diags.push(file_error(tree, (name, "key_file"), &e).with_help(
                    "key_file must hold the private key of cert_file's first certificate",
                ));
            }
        }
    }
    diags
}

/// An error about the file of `tls.FIELD` of endpoint `name`, located at its value.
fn file_error(tree: &Node, (name, field): (&str, &str), e: &control::TlsError) -> Diagnostic {
    let place = key(&["endpoints", name, "tls", field]);
    let at = tree
        .value_span(&place)
        .or_else(|| Some(tree.locate(&place)));
    Diagnostic::error(format!("endpoint `{name}`: {}", control::chain(e)), at)
}
