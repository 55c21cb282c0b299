//! `--export otlp=URL`: the OTLP/HTTP JSON body (`report::otlp`) POSTed to an
//! OpenTelemetry collector at `URL/v1/metrics` (a URL that already ends so is used as
//! given). As each run of `run --export` is stored, that run's points are pushed.

use super::{Delivery, Exporter, Live};
use crate::report::ReportData;

pub(super) const EXPORTER: Exporter = Exporter {
    kind: "otlp",
    target: "URL",
    help: "an OpenTelemetry collector's OTLP/HTTP address, http:// or https://; the metrics \
           are POSTed as JSON to URL/v1/metrics",
    check,
    deliver,
    live: Live::Run,
};

fn check(url: &str) -> Result<(), &'static str> {
    match url.starts_with("http://") || url.starts_with("https://") {
        true => Ok(()),
        false => Err("a URL beginning http:// or https:// (the collector's OTLP/HTTP address)"),
    }
}

fn deliver(url: &str, data: &ReportData) -> Delivery {
    Delivery::Post {
        url: metrics_url(url),
        content_type: "application/json",
        body: crate::report::otlp::body(data).to_string(),
    }
}

/// The collector's metrics address: `URL/v1/metrics` unless URL already ends so.
fn metrics_url(url: &str) -> String {
    let base = url.trim_end_matches('/');
    if base.ends_with("/v1/metrics") {
        base.to_string()
    } else {
        format!("{base}/v1/metrics")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_join_and_must_be_http() {
        assert_eq!(metrics_url("http://c:4318/"), "http://c:4318/v1/metrics");
        assert_eq!(
            metrics_url("http://c:4318/v1/metrics"),
            "http://c:4318/v1/metrics"
        );
        assert!(check("https://c:4318").is_ok());
        assert!(check("127.0.0.1:4318").is_err());
    }
}
