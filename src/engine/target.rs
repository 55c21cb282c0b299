//! `Target`: where requests go (base URL, path overrides, TLS, key, headers, timeouts),
//! and `Endpoint`: the one HTTP client per endpoint with its pool sized to the load. The
//! request URLs follow `control`'s one URL rule. Keys are never printed.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;

pub use super::balance::Balance;
use super::bounds::ResponseLimits;
use super::client_rule::{default_headers, lean_client};
use super::connect_times::{ConnectTimes, TimeConnects};
use super::h1::H1Client;
use super::preconnect::{self, Preconnect};
use crate::api::ApiKind;
use crate::control::{self, Route, Tls, Urls};
use crate::secrets::{is_secret_header, REDACTED};

/// Connect, idle-read (between two reads of the response) and total timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    /// Longest wait for the next bytes (or for the response headers).
    pub read: Duration,
    /// Longest time from sending to the end of the response; `None`: unbounded.
    pub total: Option<Duration>,
}

/// The plan's defaults (`control::timeouts`, the "Timeouts" table of the book, plan/limits.md).
impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: control::timeouts::CONNECT,
            read: control::timeouts::READ,
            total: Some(control::timeouts::TOTAL),
        }
    }
}

/// A server to send requests to.
#[derive(Clone, Default)]
pub struct Target {
    /// `http://host:port`, with a path prefix if the server has one (a trailing `/v1` is
    /// accepted once; see `control::urls`). With replicas: the first one's.
    pub base_url: String,
    /// Every replica's base URL when the endpoint lists `urls` (the first is `base_url`);
    /// empty: `base_url` alone.
    pub replicas: Vec<String>,
    /// How requests are spread over `replicas`.
    pub balance: Balance,
    /// The header that carries each request's session id (`session_header`), if any.
    pub session_header: Option<String>,
    /// Routes that replace an API's default one (`paths` of the plan).
    pub paths: Vec<(Route, String)>,
    /// How the server's certificate is checked.
    pub tls: Tls,
    /// Sent as `Authorization: Bearer ...`; never printed.
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub timeouts: Timeouts,
    /// Use reqwest even where the lean HTTP/1.1 client would send the load
    /// (`client_rule`).
    pub force_reqwest: bool,
    /// Measure the cold path: a new connection for every request (sent with
    /// `Connection: close`), no pool, no pre-connecting and, over TLS, no session
    /// resumption (a full handshake each); each record has its setup time.
    pub fresh_connections: bool,
    /// How much of each response is read and kept.
    pub limits: ResponseLimits,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let shown = if is_secret_header(k) { REDACTED } else { v };
                (k.as_str(), shown)
            })
            .collect();
        f.debug_struct("Target")
            .field("base_url", &self.base_url)
            .field("replicas", &self.replicas)
            .field("balance", &self.balance)
            .field("session_header", &self.session_header)
            .field("paths", &self.paths)
            .field("tls", &self.tls)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("headers", &headers)
            .field("timeouts", &self.timeouts)
            .field("force_reqwest", &self.force_reqwest)
            .field("fresh_connections", &self.fresh_connections)
            .field("limits", &self.limits)
            .finish()
    }
}

/// Why an endpoint could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid URL settings")]
    Url(#[from] control::UrlError),
    #[error("invalid TLS settings")]
    Tls(#[from] control::TlsError),
    #[error("invalid header `{name}`: names and values must be visible ASCII")]
    BadHeader { name: String },
    #[error("could not build the HTTP client for `{url}`")]
    Client {
        url: String,
        #[source]
        source: reqwest::Error,
    },
}

/// One endpoint: its HTTP client (connection pool) and parsed request URLs. The lean
/// built-in HTTP/1.1 client (`h1`) sends the load of `http://` and `https://` endpoints;
/// reqwest that of the others (proxies, `force_reqwest`, APIs on other hosts: the one
/// rule of `client_rule`).
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub(crate) client: reqwest::Client,
    /// The reqwest path's connection setup times, claimed by the responses.
    pub(crate) connects: ConnectTimes,
    pub(crate) h1: Option<Arc<H1Client>>,
    urls: Urls,
    pub(crate) timeouts: Timeouts,
    pub(crate) limits: ResponseLimits,
    /// When set, each request carries an `x-request-id` made of PREFIX and N = first + the record's
    /// index (the simulator records it in its truth, so records and truth join by id).
    pub(crate) request_ids: Option<(Arc<str>, u64)>,
    /// The target's own headers already carry an `x-request-id`.
    own_request_id: bool,
    /// Keep each response as received in its record (`raw`), for `--debug`.
    pub(crate) raw_responses: bool,
    /// With several replicas: replicas 1.. (this endpoint is replica 0), and the rule that
    /// picks one per request.
    others: Vec<Endpoint>,
    balance: Balance,
    /// `session_header`: its name, sent with each request's session id.
    pub(crate) session_header: Option<Arc<str>>,
}

impl Endpoint {
    /// Builds the client; `pool` is the number of connections the load keeps open
    /// (closed loop: the concurrency; open loop: `max_in_flight` or an estimate), 0 with
    /// `fresh_connections`.
    pub fn new(target: &Target, pool: usize) -> Result<Endpoint, EngineError> {
        let mut first = Self::one(target, pool)?;
        for url in target.replicas.iter().skip(1) {
            let replica = Target {
                base_url: url.clone(),
                ..target.clone()
            };
            first.others.push(Self::one(&replica, pool)?);
        }
        first.balance = target.balance;
        Ok(first)
    }

    /// The endpoint of `target.base_url` alone.
    fn one(target: &Target, pool: usize) -> Result<Endpoint, EngineError> {
        let urls = Urls::new(&target.base_url, &target.paths)?;
        let pool = if target.fresh_connections {
            0
        } else {
            pool.max(1)
        };
        let connects = ConnectTimes::default();
        let client = control::client::builder(&urls, &target.tls)?
            .default_headers(default_headers(target)?)
            .connect_timeout(target.timeouts.connect)
            .connector_layer(TimeConnects(connects.clone()))
            .pool_max_idle_per_host(pool)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .http1_only()
            .build()
            .map_err(|source| EngineError::Client {
                url: target.base_url.clone(),
                source,
            })?;
        let h1 = lean_client(&urls, target, pool)?;
        Ok(Endpoint {
            client,
            connects,
            h1,
            urls,
            timeouts: target.timeouts,
            limits: target.limits,
            request_ids: None,
            raw_responses: false,
            others: Vec::new(),
            balance: Balance::RoundRobin,
            session_header: target.session_header.as_deref().map(Arc::from),
            own_request_id: target
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("x-request-id")),
        })
    }

    /// Sends `x-request-id: request_id(prefix, first + index)` with every request (`index` is the
    /// record's), unless the target's headers set their own `x-request-id`.
    pub fn with_request_ids(mut self, prefix: &str, first: u64) -> Endpoint {
        if !self.own_request_id {
            self.request_ids = Some((Arc::from(prefix), first));
        }
        self.others = std::mem::take(&mut self.others)
            .into_iter()
            .map(|e| e.with_request_ids(prefix, first))
            .collect();
        self
    }

    /// Keeps every response as received in its record's `raw` (costly: for debugging).
    pub(crate) fn with_raw_responses(mut self, on: bool) -> Endpoint {
        self.raw_responses = on;
        self.others = std::mem::take(&mut self.others)
            .into_iter()
            .map(|e| e.with_raw_responses(on))
            .collect();
        self
    }

    /// How many replicas requests are spread over (1 without `urls`).
    pub fn replicas(&self) -> usize {
        1 + self.others.len()
    }

    /// The replica request `index` with session id `session` goes to: its number (`None`
    /// with one replica) and its endpoint.
    pub(crate) fn pick(&self, index: u64, session: Option<u64>) -> (Option<u32>, &Endpoint) {
        if self.others.is_empty() {
            return (None, self);
        }
        let at = self.balance.pick(self.replicas(), index, session);
        let ep = match at {
            0 => self,
            i => &self.others[i - 1],
        };
        (Some(at as u32), ep)
    }

    /// Opens the connections a load of `connections` keeps open before its first request
    /// (see `preconnect`); `None` on the reqwest path, which cannot, and with
    /// `fresh_connections`, which keeps none.
    /// With replicas, each gets its share of the connections, one replica after another.
    pub async fn preconnect(&self, connections: usize) -> Option<Preconnect> {
        let share = connections.div_ceil(self.replicas());
        let mut done = self.preconnect_one(share).await?;
        for other in &self.others {
            let more = other.preconnect_one(share).await;
            done = done.beside(more);
        }
        Some(done)
    }

    async fn preconnect_one(&self, connections: usize) -> Option<Preconnect> {
        let h1 = self.h1.as_deref().filter(|h| h.pools())?;
        Some(preconnect::fill(h1, connections).await)
    }

    pub fn base_url(&self) -> &str {
        self.urls.base()
    }

    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// The URL requests of `kind` are sent to (the one URL rule, `paths` applied).
    pub fn url(&self, kind: ApiKind) -> &Url {
        self.urls.api(kind)
    }
}

impl Target {
    /// One target per replica (each its URL as `base_url`, no replicas of its own); the
    /// target itself when it has one URL. What runs per URL (the connection test,
    /// readiness, cache resets, telemetry scrapes) runs on each of these.
    pub(crate) fn each_replica(&self) -> Vec<Target> {
        if self.replicas.is_empty() {
            return vec![self.clone()];
        }
        self.replicas
            .iter()
            .map(|url| Target {
                base_url: url.clone(),
                replicas: Vec::new(),
                ..self.clone()
            })
            .collect()
    }

    /// The control-plane client of this server (connection test, `check`, readiness,
    /// scrapes, cache resets): the same URLs, TLS, key and headers as the load.
    pub fn control(&self, timeout: Duration) -> Result<control::Client, control::ControlError> {
        control::Client::new(&control::ClientSpec {
            timeout,
            ..self.control_spec()
        })
    }

    /// Where this server is and how to talk to it, for the stages that must not know the
    /// engine (`servers`, `telemetry`): they set their own `timeout`.
    pub(crate) fn control_spec(&self) -> control::ClientSpec<'_> {
        control::ClientSpec {
            base_url: &self.base_url,
            paths: &self.paths,
            tls: &self.tls,
            api_key: self.api_key.as_deref(),
            headers: &self.headers,
            connect_timeout: self.timeouts.connect,
            timeout: self.timeouts.read,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_secrets() {
        let t = Target {
            base_url: "http://127.0.0.1:1".into(),
            api_key: Some("sk-very-secret".into()),
            headers: vec![
                ("X-Api-Key".into(), "hidden".into()),
                ("X-Trace".into(), "shown".into()),
            ],
            timeouts: Timeouts::default(),
            ..Target::default()
        };
        let text = format!("{t:?}");
        assert!(
            !text.contains("sk-very-secret") && !text.contains("hidden"),
            "{text}"
        );
        assert!(text.contains("shown"));
        let ep = Endpoint::new(&t, 4).unwrap();
        assert!(!format!("{ep:?}").contains("sk-very-secret"));
    }

    #[test]
    fn endpoints_send_to_the_one_url_rule() {
        for base in [
            "http://127.0.0.1:9",
            "http://127.0.0.1:9/",
            "http://127.0.0.1:9/v1",
        ] {
            let t = Target {
                base_url: base.into(),
                ..Target::default()
            };
            let ep = Endpoint::new(&t, 1).unwrap();
            assert_eq!(
                ep.url(ApiKind::Chat).as_str(),
                "http://127.0.0.1:9/v1/chat/completions"
            );
            assert!(ep.h1.is_some(), "{base}");
        }
        let https = Target {
            base_url: "https://127.0.0.1:9/v1".into(),
            ..Target::default()
        };
        assert!(Endpoint::new(&https, 1).unwrap().h1.is_some());
        let forced = Target {
            force_reqwest: true,
            ..https
        };
        assert!(Endpoint::new(&forced, 1).unwrap().h1.is_none());
        let t = Target {
            base_url: "http://127.0.0.1:9/gw/v1".into(),
            paths: vec![(Route::Api(ApiKind::Rerank), "http://127.0.0.2:9/r".into())],
            ..Target::default()
        };
        let ep = Endpoint::new(&t, 1).unwrap();
        assert_eq!(
            ep.url(ApiKind::Embeddings).as_str(),
            "http://127.0.0.1:9/gw/v1/embeddings"
        );
        assert!(
            ep.h1.is_none(),
            "an API on another host goes through reqwest"
        );
        let t = Target {
            base_url: "not a url".into(),
            ..Target::default()
        };
        assert!(Endpoint::new(&t, 1).is_err());
    }
}
