//! The server's side of a run: its Prometheus `/metrics` scraped before and after a
//! run's passes (`around`: the prefix-cache hit ratio from the difference of the hit and
//! query counters, stored with the run as `server_metrics` phases `before`/`after`; the
//! token and request counters of `counts`), sampled during the measured pass
//! (`sampler`, `frame`, `scalars`), a small parser of the text exposition format, and a
//! launched server's log. Knows the counter names of vLLM and SGLang as defaults and
//! alternatives; knows nothing about the engine.

use std::collections::BTreeMap;

pub mod accelerators;
mod around;
pub mod counts;
pub mod expo;
pub mod families;
pub mod frame;
pub mod log_cache;
pub mod queue;
pub mod run;
pub mod sampler;
pub mod scalars;
pub mod settle;

pub use around::{Scraped, ServerScrape};

use crate::control;
use crate::plan::ServerMetricsSpec;

/// vLLM (v1): prompt tokens found in the prefix cache.
pub(crate) const VLLM_HITS: &str = "vllm:prefix_cache_hits_total";
/// vLLM (v1): prompt tokens looked up in the prefix cache.
pub(crate) const VLLM_QUERIES: &str = "vllm:prefix_cache_queries_total";
/// SGLang: cached prompt tokens (one series per `cache_source`, summed).
pub(crate) const SGLANG_HITS: &str = "sglang:cached_tokens_total";
/// SGLang: prompt tokens processed.
pub(crate) const SGLANG_QUERIES: &str = "sglang:prompt_tokens_total";

/// Where and what to scrape on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterNames {
    pub path: String,
    pub hits: String,
    pub queries: String,
}

impl CounterNames {
    /// The names to look for: the endpoint's `metrics` table, or else vLLM's, then
    /// SGLang's, at `/metrics` (the first pair a server exposes is used).
    pub(crate) fn candidates(spec: Option<&ServerMetricsSpec>) -> Vec<CounterNames> {
        let at_metrics = |hits: &str, queries: &str| CounterNames {
            path: "/metrics".into(),
            hits: hits.into(),
            queries: queries.into(),
        };
        match spec {
            Some(s) => vec![CounterNames {
                path: s.path.clone(),
                hits: s.cache_hits.clone(),
                queries: s.cache_queries.clone(),
            }],
            None => vec![
                at_metrics(VLLM_HITS, VLLM_QUERIES),
                at_metrics(SGLANG_HITS, SGLANG_QUERIES),
            ],
        }
    }
}

/// Sums every series of each metric name in a Prometheus text exposition (labels dropped).
/// Comments, blank lines and lines that do not parse are skipped.
pub fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for s in expo::samples(text) {
        *out.entry(s.name.to_string()).or_insert(0.0) += s.value;
    }
    out
}

/// The cache counters of one scrape: only the two names asked for.
pub(crate) fn pick(all: &BTreeMap<String, f64>, names: &CounterNames) -> BTreeMap<String, f64> {
    [&names.hits, &names.queries]
        .into_iter()
        .filter_map(|n| all.get(n).map(|v| (n.clone(), *v)))
        .collect()
}

/// The first candidate whose two counters are both on the page, with their values.
pub fn find<'a>(
    all: &BTreeMap<String, f64>,
    candidates: impl IntoIterator<Item = &'a CounterNames>,
) -> Option<(&'a CounterNames, BTreeMap<String, f64>)> {
    candidates.into_iter().find_map(|names| {
        let picked = pick(all, names);
        (picked.len() == 2).then_some((names, picked))
    })
}

/// The hit ratio of the first candidate both scrapes hold (see `hit_ratio`).
pub(crate) fn first_ratio(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    candidates: &[CounterNames],
) -> Option<f64> {
    candidates
        .iter()
        .find_map(|names| hit_ratio(before, after, names))
}

/// Hits over queries between two scrapes; `None` when either counter is missing, no
/// query was counted, or a counter went backwards (the server restarted).
pub(crate) fn hit_ratio(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    names: &CounterNames,
) -> Option<f64> {
    let delta = |n: &str| Some(after.get(n)? - before.get(n)?);
    let hits = delta(&names.hits)?;
    let queries = delta(&names.queries)?;
    (queries > 0.0 && hits >= 0.0).then(|| (hits / queries).min(1.0))
}

/// Scrapes each candidate's path (each path once; a server path joined to the endpoint's
/// base URL by the one URL rule); the first candidate found with its two counters, or
/// `None` when the server has no such page or counters (or is not reachable), which makes
/// the counter ratio unknown.
pub async fn scrape<'a>(
    client: &control::Client,
    candidates: &'a [CounterNames],
) -> Option<(&'a CounterNames, BTreeMap<String, f64>)> {
    let mut paths: Vec<&str> = Vec::new();
    for c in candidates {
        if !paths.contains(&c.path.as_str()) {
            paths.push(&c.path);
        }
    }
    for path in paths {
        let Ok(url) = client.urls().server(path) else {
            continue;
        };
        let Some(page) = page(client, url).await else {
            continue;
        };
        let found = find(&parse(&page), candidates.iter().filter(|c| c.path == path));
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Largest metrics page read: a server that sends more (or never stops) has no counters
/// (a vLLM page is about 100 kB).
pub(crate) const MAX_PAGE_BYTES: usize = 16 << 20;

pub(crate) async fn page(client: &control::Client, url: url::Url) -> Option<String> {
    fetch(client, url, control::timeouts::SCRAPE).await.ok()
}

/// One page, at most `MAX_PAGE_BYTES`, within `timeout`; the error in words.
pub(crate) async fn fetch(
    client: &control::Client,
    url: url::Url,
    timeout: std::time::Duration,
) -> Result<String, String> {
    fetch_at_most(client, url, timeout, MAX_PAGE_BYTES).await
}

/// One page of at most `max` bytes, within `timeout`; the error in words.
pub(crate) async fn fetch_at_most(
    client: &control::Client,
    url: url::Url,
    timeout: std::time::Duration,
    max: usize,
) -> Result<String, String> {
    let read = async {
        let mut resp = client
            .request(reqwest::Method::GET, url)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| control::chain(&e))?;
        if !resp.status().is_success() {
            return Err(format!("HTTP {}", resp.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(piece) = resp.chunk().await.map_err(|e| control::chain(&e))? {
            if body.len() + piece.len() > max {
                return Err(format!("the page is larger than {max} bytes"));
            }
            body.extend_from_slice(&piece);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    };
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} ms", timeout.as_millis())))
}

/// The pages an endpoint's runs scrape: its own metrics page (`metrics.path`, default
/// `/metrics`) and `telemetry.urls`, each joined to the base URL by the URL rule; `None`
/// when telemetry is off. The endpoint's key and headers go only to its own origin.
pub fn plan(
    server: control::ClientSpec<'_>,
    spec: Option<&crate::plan::TelemetrySpec>,
    metrics: Option<&ServerMetricsSpec>,
) -> Result<Option<sampler::TelemetryPlan>, control::ControlError> {
    let default = crate::plan::TelemetrySpec::default();
    let t = spec.unwrap_or(&default);
    if !t.enabled {
        return Ok(None);
    }
    let own = control::Client::new(&server)?;
    let own_path = metrics.map_or("/metrics", |m| m.path.as_str());
    let mut targets = Vec::new();
    let paths = std::iter::once(own_path).chain(t.urls.iter().map(String::as_str));
    for (i, path) in paths.enumerate() {
        let url = own
            .urls()
            .server(path)
            .map_err(control::ControlError::Url)?;
        if targets.iter().any(|t: &sampler::ScrapeTarget| t.url == url) {
            continue;
        }
        let client = if own.urls().same_origin(&url) {
            own.clone()
        } else {
            let origin = url.origin().ascii_serialization();
            control::Client::new(&control::ClientSpec {
                base_url: &origin,
                paths: &[],
                api_key: None,
                headers: &[],
                ..server
            })?
        };
        targets.push(sampler::ScrapeTarget {
            url,
            client,
            implicit: i == 0 && spec.is_none(),
        });
    }
    Ok(Some(sampler::TelemetryPlan {
        targets,
        interval: t.interval.0,
    }))
}

/// Why a scrape's figures could not be stored (a failed scrape is no error: it gives
/// no figures).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the results database lock was poisoned by a crashed writer")]
    Poisoned,
    #[error("results database")]
    Store(#[from] crate::store::StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM: &str = r#"# HELP vllm:prefix_cache_hits_total Prefix cache hits.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 300.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 200.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 1e3 1700000000000
weird{label="a } b \" c"} 7
bad line without value
nan_metric NaN
"#;

    #[test]
    fn parses_and_sums_series() {
        let m = parse(VLLM);
        assert_eq!(m.get(VLLM_HITS), Some(&500.0));
        assert_eq!(m.get(VLLM_QUERIES), Some(&2000.0));
        assert_eq!(m.get("weird"), Some(&7.0));
        assert!(!m.contains_key("bad"));
        assert!(!m.contains_key("nan_metric"));
    }

    #[test]
    fn ratio_of_deltas() {
        let names = CounterNames::candidates(None).remove(0);
        let before = pick(&parse(VLLM), &names);
        let after: BTreeMap<String, f64> = [
            (VLLM_HITS.to_string(), 800.0),
            (VLLM_QUERIES.to_string(), 3000.0),
        ]
        .into();
        assert_eq!(hit_ratio(&before, &after, &names), Some(0.3));
        assert_eq!(hit_ratio(&before, &before, &names), None);
        let restarted: BTreeMap<String, f64> = [
            (VLLM_HITS.to_string(), 1.0),
            (VLLM_QUERIES.to_string(), 3000.0),
        ]
        .into();
        assert_eq!(hit_ratio(&before, &restarted, &names), None);
    }

    #[test]
    fn sglang_names_from_the_metrics_table() {
        let spec = ServerMetricsSpec {
            path: "/metrics".into(),
            cache_hits: SGLANG_HITS.into(),
            cache_queries: SGLANG_QUERIES.into(),
        };
        let names = CounterNames::candidates(Some(&spec)).remove(0);
        let text = "sglang:prompt_tokens_total{model_name=\"q\"} 4096\n\
                    sglang:cached_tokens_total{model_name=\"q\",cache_source=\"device\"} 3000\n\
                    sglang:cached_tokens_total{model_name=\"q\",cache_source=\"host\"} 168\n";
        let m = pick(&parse(text), &names);
        assert_eq!(m.get(SGLANG_HITS), Some(&3168.0));
        let zero: BTreeMap<String, f64> = [
            (SGLANG_HITS.to_string(), 0.0),
            (SGLANG_QUERIES.to_string(), 0.0),
        ]
        .into();
        assert_eq!(hit_ratio(&zero, &m, &names), Some(3168.0 / 4096.0));
    }

    #[test]
    fn missing_counter_is_unknown() {
        let names = CounterNames::candidates(None).remove(0);
        let only_queries: BTreeMap<String, f64> = [(VLLM_QUERIES.to_string(), 10.0)].into();
        assert_eq!(hit_ratio(&BTreeMap::new(), &only_queries, &names), None);
    }

    #[test]
    fn without_a_metrics_table_vllm_then_sglang_names_are_found() {
        let candidates = CounterNames::candidates(None);
        let sglang = "sglang:prompt_tokens_total 100\nsglang:cached_tokens_total 40\n";
        let (names, values) = find(&parse(sglang), &candidates).unwrap();
        assert_eq!(names.hits, SGLANG_HITS);
        assert_eq!(values.len(), 2);
        let (names, _) = find(&parse(VLLM), &candidates).unwrap();
        assert_eq!(names.hits, VLLM_HITS);
        // One counter of a pair is not enough.
        assert!(find(&parse("sglang:prompt_tokens_total 100\n"), &candidates).is_none());
        let before = parse("sglang:prompt_tokens_total 100\nsglang:cached_tokens_total 40\n");
        let after = parse("sglang:prompt_tokens_total 300\nsglang:cached_tokens_total 90\n");
        assert_eq!(first_ratio(&before, &after, &candidates), Some(0.25));
    }
}
