//! The one URL rule: where every request perfplan sends goes, built from an endpoint's
//! `base_url` and its `paths` overrides.
//!
//! - The **server root** is `base_url` without a trailing `/` and without one trailing
//!   `/v1` (so `http://gw/openai/v1` and `http://gw/openai` name the same server; a
//!   `/v1/v1` keeps one `/v1`).
//! - A **server path** (the APIs' routes `/v1/chat/completions` …, `/v1/models`,
//!   `/metrics`, `/reset_prefix_cache`, and the plan's `ready`, `reset_cache` and
//!   `metrics.path`) is joined to the server root; `base_url`'s query, if any, goes with it.
//!   A full `http(s)://` URL there is used as written.
//! - A **`paths` override** replaces one API's route: starting with `/` it is taken from
//!   the host's root (`/compatible-api/v1/reranks`), a relative one (`v2/rerank`) is a
//!   server path, and a full `http(s)://` URL is used as written. Only a server path
//!   carries `base_url`'s query; the others carry their own.

use url::{Position, Url};

use crate::api::ApiKind;

/// A request perfplan sends whose route a plan can override (`paths.<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// One of the benchmarked APIs.
    Api(ApiKind),
    /// The model list: the connection test, `check` and the default readiness probe.
    Models,
}

impl Route {
    pub const ALL: [Route; 6] = [
        Route::Api(ApiKind::Chat),
        Route::Api(ApiKind::Completions),
        Route::Api(ApiKind::Responses),
        Route::Api(ApiKind::Embeddings),
        Route::Api(ApiKind::Rerank),
        Route::Models,
    ];

    /// The key of `paths` (`chat`, `completions`, `responses`, `embeddings`, `rerank`, `models`).
    pub fn name(self) -> &'static str {
        match self {
            Route::Api(kind) => kind.as_str(),
            Route::Models => "models",
        }
    }

    pub fn parse(name: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The route's server path when not overridden.
    pub(crate) fn default_path(self) -> &'static str {
        match self {
            Route::Api(kind) => kind.path(),
            Route::Models => "/v1/models",
        }
    }
}

/// Why a URL could not be built.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error("invalid base URL `{url}`")]
    Base {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("base URL `{url}` {reason}")]
    BaseShape { url: String, reason: &'static str },
    #[error("invalid URL `{value}`")]
    Full {
        value: String,
        #[source]
        source: url::ParseError,
    },
    #[error("`{value}` {reason}")]
    Shape { value: String, reason: &'static str },
}

/// What a written route is, before it is joined to a base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reference {
    /// `http(s)://…`: used as written.
    Full(Url),
    /// `/path`: from the host's root.
    HostRoot(String),
    /// `path`: a server path.
    Relative(String),
}

/// Checks the form of a `paths` override (as `Urls::new` reads it), without a base URL.
pub(crate) fn check_override(value: &str) -> Result<(), UrlError> {
    reference(value).map(|_| ())
}

fn reference(value: &str) -> Result<Reference, UrlError> {
    let shape = |reason| UrlError::Shape {
        value: value.to_string(),
        reason,
    };
    if value.trim().is_empty() {
        return Err(shape("is empty: write a path such as \"/v2/rerank\""));
    }
    if value.chars().any(char::is_whitespace) {
        return Err(shape("contains white space"));
    }
    if value.contains('#') {
        return Err(shape("has a fragment (`#…`), which is never sent"));
    }
    if value.starts_with("http://") || value.starts_with("https://") {
        let url = Url::parse(value).map_err(|source| UrlError::Full {
            value: value.to_string(),
            source,
        })?;
        return Ok(Reference::Full(url));
    }
    if value.starts_with("//") || value.contains("://") {
        return Err(shape("is neither a path nor an http:// or https:// URL"));
    }
    Ok(match value.strip_prefix('/') {
        Some(_) => Reference::HostRoot(value.to_string()),
        None => Reference::Relative(value.to_string()),
    })
}

/// The request URLs of one endpoint, built once (see the module's rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Urls {
    /// `base_url` as written, for messages.
    base: String,
    /// The server root: scheme, host, port and path prefix, no query.
    root: Url,
    /// `base_url`'s query, carried by every server path.
    query: Option<String>,
    /// The URL of each route, in `Route::ALL` order.
    routes: Vec<(Route, Url)>,
}

impl Urls {
    /// Parses `base_url` and joins every route, with `paths` overriding some.
    pub fn new(base_url: &str, paths: &[(Route, String)]) -> Result<Urls, UrlError> {
        let parsed = Url::parse(base_url).map_err(|source| UrlError::Base {
            url: base_url.to_string(),
            source,
        })?;
        let shape = |reason| UrlError::BaseShape {
            url: base_url.to_string(),
            reason,
        };
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(shape("is not http:// or https://"));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(shape("names no host"));
        }
        if parsed.fragment().is_some() {
            return Err(shape("has a fragment (`#…`), which is never sent"));
        }
        let mut root = parsed.clone();
        root.set_query(None);
        let path = parsed.path().trim_end_matches('/');
        root.set_path(path.strip_suffix("/v1").unwrap_or(path));
        let mut urls = Urls {
            base: base_url.to_string(),
            root,
            query: parsed.query().map(str::to_string),
            routes: Vec::with_capacity(Route::ALL.len()),
        };
        for route in Route::ALL {
            let url = match paths.iter().rev().find(|(r, _)| *r == route) {
                Some((_, value)) => urls.resolve(value)?,
                None => urls.server(route.default_path())?,
            };
            urls.routes.push((route, url));
        }
        Ok(urls)
    }

    /// `base_url` as written.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The server root (`base_url` without a trailing `/v1`).
    pub fn root(&self) -> &Url {
        &self.root
    }

    /// The URL of `route`.
    pub fn of(&self, route: Route) -> &Url {
        match self.routes.iter().find(|(r, _)| *r == route) {
            Some((_, url)) => url,
            // Every route is joined in `new`; the root is never reached.
            None => &self.root,
        }
    }

    /// The URL of an API.
    pub fn api(&self, kind: ApiKind) -> &Url {
        self.of(Route::Api(kind))
    }

    /// A server path (`/metrics`, `/health`, `v1/models?x=1`) joined to the server root with
    /// `base_url`'s query, or a full `http(s)://` URL as written.
    pub fn server(&self, path: &str) -> Result<Url, UrlError> {
        match reference(path)? {
            Reference::Full(url) => Ok(url),
            Reference::HostRoot(p) | Reference::Relative(p) => Ok(self.join(&p)),
        }
    }

    /// A `paths` override: `/…` from the host's root, relative as a server path, or a full URL.
    pub fn resolve(&self, value: &str) -> Result<Url, UrlError> {
        match reference(value)? {
            Reference::Full(url) => Ok(url),
            Reference::HostRoot(p) => {
                let (path, query) = split_query(&p);
                let mut url = self.root.clone();
                url.set_path(path);
                url.set_query(query);
                Ok(url)
            }
            Reference::Relative(p) => Ok(self.join(&p)),
        }
    }

    fn join(&self, reference: &str) -> Url {
        let (path, own_query) = split_query(reference);
        let mut url = self.root.clone();
        let prefix = self.root.path().trim_end_matches('/');
        url.set_path(&format!("{prefix}/{}", path.trim_start_matches('/')));
        let query = match (self.query.as_deref(), own_query) {
            (Some(a), Some(b)) => Some(format!("{a}&{b}")),
            (a, b) => a.or(b).map(str::to_string),
        };
        url.set_query(query.as_deref());
        url
    }

    /// Whether `url` goes to the same scheme, host and port as the base URL.
    pub(crate) fn same_origin(&self, url: &Url) -> bool {
        url.origin() == self.root.origin()
    }
}

fn split_query(reference: &str) -> (&str, Option<&str>) {
    match reference.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (reference, None),
    }
}

/// The request target of an HTTP/1.1 request line: the URL's path and query.
pub fn request_target(url: &Url) -> &str {
    &url[Position::BeforePath..Position::AfterQuery]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(base: &str) -> String {
        Urls::new(base, &[]).unwrap().api(ApiKind::Chat).to_string()
    }

    #[test]
    fn base_paths_are_kept_and_v1_accepted_once() {
        let cases = [
            ("http://h:9", "http://h:9/v1/chat/completions"),
            ("http://h:9/", "http://h:9/v1/chat/completions"),
            ("http://h:9/v1", "http://h:9/v1/chat/completions"),
            ("http://h:9/v1/", "http://h:9/v1/chat/completions"),
            (
                "http://gw/openai/v1",
                "http://gw/openai/v1/chat/completions",
            ),
            (
                "http://gw/openai/v1/",
                "http://gw/openai/v1/chat/completions",
            ),
            ("http://gw/openai", "http://gw/openai/v1/chat/completions"),
            ("http://gw/v1/v1", "http://gw/v1/v1/chat/completions"),
            (
                "http://h/serving/model-a",
                "http://h/serving/model-a/v1/chat/completions",
            ),
            ("http://h/v1x", "http://h/v1x/v1/chat/completions"),
            (
                "https://h/a/v1?key=k",
                "https://h/a/v1/chat/completions?key=k",
            ),
            (
                "https://h/a?x=1&y=2",
                "https://h/a/v1/chat/completions?x=1&y=2",
            ),
        ];
        for (base, want) in cases {
            assert_eq!(chat(base), want, "base {base}");
        }
    }

    #[test]
    fn every_route_and_server_path_shares_the_root() {
        let urls = Urls::new("http://gw/openai/v1?k=1", &[]).unwrap();
        let want = [
            (
                Route::Api(ApiKind::Completions),
                "http://gw/openai/v1/completions?k=1",
            ),
            (
                Route::Api(ApiKind::Responses),
                "http://gw/openai/v1/responses?k=1",
            ),
            (
                Route::Api(ApiKind::Embeddings),
                "http://gw/openai/v1/embeddings?k=1",
            ),
            (
                Route::Api(ApiKind::Rerank),
                "http://gw/openai/v1/rerank?k=1",
            ),
            (Route::Models, "http://gw/openai/v1/models?k=1"),
        ];
        for (route, url) in want {
            assert_eq!(urls.of(route).as_str(), url, "{}", route.name());
        }
        let server = |p: &str| urls.server(p).unwrap().to_string();
        assert_eq!(server("/metrics"), "http://gw/openai/metrics?k=1");
        assert_eq!(server("metrics"), "http://gw/openai/metrics?k=1");
        assert_eq!(
            server("/health?deep=1"),
            "http://gw/openai/health?k=1&deep=1"
        );
        assert_eq!(server("http://other:1/ready"), "http://other:1/ready");
    }

    #[test]
    fn overrides_from_the_host_root_relative_or_whole() {
        let paths = [
            (
                Route::Api(ApiKind::Rerank),
                "/compatible-api/v1/reranks".to_string(),
            ),
            (
                Route::Api(ApiKind::Embeddings),
                "v2/embed?fast=1".to_string(),
            ),
            (Route::Models, "https://models.example/list".to_string()),
            (Route::Api(ApiKind::Chat), "/chat?api-version=2".to_string()),
        ];
        let urls = Urls::new("https://h:8443/compatible-mode/v1?k=1", &paths).unwrap();
        let of = |r| urls.of(r).to_string();
        assert_eq!(
            of(Route::Api(ApiKind::Rerank)),
            "https://h:8443/compatible-api/v1/reranks"
        );
        assert_eq!(
            of(Route::Api(ApiKind::Embeddings)),
            "https://h:8443/compatible-mode/v2/embed?k=1&fast=1"
        );
        assert_eq!(of(Route::Models), "https://models.example/list");
        assert_eq!(
            of(Route::Api(ApiKind::Chat)),
            "https://h:8443/chat?api-version=2"
        );
        assert_eq!(
            of(Route::Api(ApiKind::Completions)),
            "https://h:8443/compatible-mode/v1/completions?k=1"
        );
        assert!(urls.same_origin(urls.of(Route::Api(ApiKind::Rerank))));
        assert!(!urls.same_origin(urls.of(Route::Models)));
    }

    #[test]
    fn request_targets_carry_path_and_query() {
        let urls = Urls::new("http://127.0.0.1:9/gateway/openai/v1?x=1", &[]).unwrap();
        assert_eq!(
            request_target(urls.api(ApiKind::Chat)),
            "/gateway/openai/v1/chat/completions?x=1"
        );
        let bare = Urls::new("http://127.0.0.1:9", &[]).unwrap();
        assert_eq!(request_target(bare.of(Route::Models)), "/v1/models");
    }

    #[test]
    fn bad_bases_and_overrides_are_errors() {
        for base in ["not a url", "ftp://h/x", "http://h/#frag", "sim://a"] {
            assert!(Urls::new(base, &[]).is_err(), "{base}");
        }
        for value in ["", " ", "/a b", "//h/x", "ftp://h/x", "/x#y", "http://"] {
            assert!(check_override(value).is_err(), "{value:?}");
        }
        for value in ["/x", "x/y", "https://h/x?y=1"] {
            assert!(check_override(value).is_ok(), "{value:?}");
        }
        assert_eq!(Route::parse("rerank"), Some(Route::Api(ApiKind::Rerank)));
        assert_eq!(Route::parse("models"), Some(Route::Models));
        assert_eq!(Route::parse("model"), None);
    }
}
