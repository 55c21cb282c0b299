//! The HTTP client of the control plane (connection test, `check`, readiness, scrapes,
//! cache resets) and the settings every reqwest client of perfplan shares, the load's
//! included: the endpoint's TLS, and no proxy for loopback addresses.

use std::time::Duration;

use reqwest::{Method, RequestBuilder};
use url::Url;

use super::tls::{Tls, TlsError};
use super::urls::{Route, UrlError, Urls};

/// Why a control client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("endpoint URL")]
    Url(#[from] UrlError),
    #[error("TLS settings")]
    Tls(#[from] TlsError),
    #[error("cannot build the HTTP client for `{url}`")]
    Client {
        url: String,
        #[source]
        source: reqwest::Error,
    },
}

/// Whether `url` names this machine (requests to it never go through a proxy).
pub(crate) fn is_loopback(url: &Url) -> bool {
    matches!(
        url.host_str(),
        Some("127.0.0.1" | "localhost" | "[::1]" | "::1")
    )
}

/// A reqwest builder with what every client of an endpoint shares: its TLS settings, and
/// no proxy for a loopback server.
pub fn builder(urls: &Urls, tls: &Tls) -> Result<reqwest::ClientBuilder, TlsError> {
    let mut b = reqwest::Client::builder();
    if is_loopback(urls.root()) {
        b = b.no_proxy();
    }
    tls.apply(b)
}

/// Where a server is and how to talk to it.
#[derive(Debug, Clone, Copy)]
pub struct ClientSpec<'a> {
    pub base_url: &'a str,
    pub paths: &'a [(Route, String)],
    pub tls: &'a Tls,
    /// Sent as `Authorization: Bearer …`.
    pub api_key: Option<&'a str>,
    pub headers: &'a [(String, String)],
    pub connect_timeout: Duration,
    /// Longest whole request.
    pub timeout: Duration,
}

/// One endpoint's control-plane client: its URLs, TLS, key and headers.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    urls: Urls,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    tls: Tls,
}

// Hand-written so that the key and header values are never printed.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("urls", &self.urls)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl Client {
    pub fn new(spec: &ClientSpec<'_>) -> Result<Client, ControlError> {
        let urls = Urls::new(spec.base_url, spec.paths)?;
        let http = builder(&urls, spec.tls)?
            .connect_timeout(spec.connect_timeout)
            .timeout(spec.timeout)
            .build()
            .map_err(|source| ControlError::Client {
                url: spec.base_url.to_string(),
                source,
            })?;
        Ok(Client {
            http,
            urls,
            api_key: spec.api_key.map(str::to_string),
            headers: spec.headers.to_vec(),
            tls: spec.tls.clone(),
        })
    }

    pub fn urls(&self) -> &Urls {
        &self.urls
    }

    pub fn tls(&self) -> &Tls {
        &self.tls
    }

    /// A request of `method` on `url` with the endpoint's key and headers.
    pub fn request(&self, method: Method, url: Url) -> RequestBuilder {
        let mut req = self.http.request(method, url);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        req
    }

    /// `GET` of a route (`Route::Models`: the model list).
    pub fn get(&self, route: Route) -> RequestBuilder {
        self.request(Method::GET, self.urls.of(route).clone())
    }
}
