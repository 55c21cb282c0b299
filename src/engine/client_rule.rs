//! Which HTTP client sends an endpoint's load, by one rule (the book, plan/endpoints.md,
//! "Which client sends the load"), and what each is set up with: the lean HTTP/1.1
//! client's addresses, prepared headers, TLS dial and session resumption; reqwest's
//! default headers. Keys are never printed.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONNECTION, CONTENT_TYPE,
};
use rustls::client::Resumption;

use super::h1::H1Client;
use super::h1_wire::TlsDial;
use super::target::{EngineError, Target};
use super::tls_sessions::Sessions;
use crate::api::ApiKind;
use crate::control::{self, Urls};
use crate::secrets::is_secret_header;

/// The proxy variables that apply to a URL of `scheme` (either case, as reqwest reads them).
fn proxy_vars(scheme: &str) -> [&'static str; 4] {
    match scheme {
        "https" => ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"],
        _ => ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"],
    }
}

/// The one rule: the lean HTTP/1.1 client sends the load of `http://` and `https://`
/// endpoints alike, unless the endpoint sets `force_reqwest`, or a proxy variable of the
/// URL's scheme is set and the server is not on this machine, or an API's URL (`paths`)
/// is on another scheme, host or port than the base URL: those go through reqwest.
pub(crate) fn takes_lean_client(urls: &Urls, target: &Target) -> bool {
    let url = urls.root();
    let proxied = proxy_vars(url.scheme())
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    let one_origin = ApiKind::ALL
        .into_iter()
        .all(|k| urls.same_origin(urls.api(k)));
    let proxy_applies = proxied && !control::client::is_loopback(url);
    matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && !proxy_applies
        && !target.force_reqwest
        && one_origin
}

/// The lean client of an endpoint the rule gives it (`None` otherwise, and when its host
/// does not resolve or is no valid TLS server name: reqwest then reports that per request).
pub(crate) fn lean_client(
    urls: &Urls,
    target: &Target,
    pool: usize,
) -> Result<Option<Arc<H1Client>>, EngineError> {
    let url = urls.root();
    let Some(host) = url.host_str().filter(|_| takes_lean_client(urls, target)) else {
        return Ok(None);
    };
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    let tls = match url.scheme() {
        "https" => {
            let config = target.tls.client_config(resumption(target, pool))?;
            let Some(dial) = TlsDial::new(config, bare_host) else {
                return Ok(None);
            };
            Some(dial)
        }
        _ => None,
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let mut addrs: Vec<SocketAddr> = match (bare_host, port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(_) => return Ok(None),
    };
    // IPv4 first: `localhost` servers often listen on 127.0.0.1 only.
    addrs.sort_by_key(SocketAddr::is_ipv6);
    let headers = lean_headers(target, &format!("{host}:{port}"))?;
    let client = H1Client::new(addrs, &headers, pool, target.timeouts.connect);
    Ok(Some(Arc::new(match tls {
        Some(dial) => client.with_tls(dial),
        None => client,
    })))
}

/// The headers the lean client sends with every request: `Host`, content type, user
/// agent, key, `Connection: close` with `fresh_connections`, then the endpoint's own
/// (each replacing a default of the same name).
fn lean_headers(target: &Target, host: &str) -> Result<Vec<(String, String)>, EngineError> {
    let mut headers = vec![
        ("Host".to_string(), host.to_string()),
        ("Content-Type".to_string(), "application/json".to_string()),
        (
            "User-Agent".to_string(),
            concat!("perfplan/", env!("CARGO_PKG_VERSION")).to_string(),
        ),
    ];
    if let Some(key) = &target.api_key {
        headers.push(("Authorization".to_string(), format!("Bearer {key}")));
    }
    if target.fresh_connections {
        headers.push(("Connection".to_string(), "close".to_string()));
    }
    for (name, value) in &target.headers {
        HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| EngineError::BadHeader { name: name.clone() })?;
        HeaderValue::from_str(value).map_err(|_| EngineError::BadHeader { name: name.clone() })?;
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    Ok(headers)
}

/// TLS session resumption of the lean client: sessions of earlier connections kept for
/// the next ones (`tls_sessions`), none with `fresh_connections` (every handshake a full
/// one: the cold path).
fn resumption(target: &Target, pool: usize) -> Resumption {
    if target.fresh_connections {
        Resumption::disabled()
    } else {
        Resumption::store(Arc::new(Sessions::new(pool)))
    }
}

/// reqwest's default headers of an endpoint: content type, `Connection: close` with
/// `fresh_connections`, the endpoint's headers and key (marked sensitive).
pub(crate) fn default_headers(target: &Target) -> Result<HeaderMap, EngineError> {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if target.fresh_connections {
        map.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    for (name, value) in &target.headers {
        let bad = || EngineError::BadHeader { name: name.clone() };
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let mut v = HeaderValue::from_str(value).map_err(|_| bad())?;
        v.set_sensitive(is_secret_header(name));
        map.insert(n, v);
    }
    if let Some(key) = &target.api_key {
        let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            EngineError::BadHeader {
                name: "authorization".into(),
            }
        })?;
        v.set_sensitive(true);
        map.insert(AUTHORIZATION, v);
    }
    Ok(map)
}
