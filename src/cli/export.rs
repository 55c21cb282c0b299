//! `report --export KIND=TARGET`: a suite's metrics pushed where a team looks.
//! `otlp=URL` POSTs the OTLP/HTTP JSON body (`report::otlp`) to `URL/v1/metrics` (a URL
//! that already ends so is used as given); `prometheus=FILE` writes the text exposition
//! (`report::prometheus`) to FILE, for a node exporter's textfile collector.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use super::failure::Failure;
use crate::report::{otlp, prometheus, ReportData, ReportError};
use crate::store::Store;

/// How long a collector may take to answer.
const OTLP_TIMEOUT: Duration = Duration::from_secs(10);

/// One `--export`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Export {
    Otlp(String),
    Prometheus(PathBuf),
}

impl FromStr for Export {
    type Err = String;
    fn from_str(s: &str) -> Result<Export, String> {
        match s.split_once('=') {
            Some(("otlp", url)) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(Export::Otlp(url.to_string()))
            }
            Some(("prometheus", file)) if !file.is_empty() => {
                Ok(Export::Prometheus(PathBuf::from(file)))
            }
            _ => Err(format!(
                "`{s}`: write otlp=URL (http:// or https://, the collector's OTLP/HTTP address) or prometheus=FILE"
            )),
        }
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    #[error("cannot push the metrics to the OTLP collector at {url}")]
    Send {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the OTLP collector at {url} answered {status}: {body}")]
    Refused {
        url: String,
        status: u16,
        body: String,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the HTTP client")]
    Runtime(#[source] std::io::Error),
}

/// The collector's metrics address: `URL/v1/metrics` unless URL already ends so.
pub(crate) fn metrics_url(url: &str) -> String {
    let base = url.trim_end_matches('/');
    if base.ends_with("/v1/metrics") {
        base.to_string()
    } else {
        format!("{base}/v1/metrics")
    }
}

/// `--export` of the suite in `db` (a database or output folder): every export done, or
/// the first that failed.
pub(crate) fn export_suite(
    db: &Path,
    accept: &[String],
    exports: &[Export],
) -> Result<(), Failure> {
    if exports.is_empty() {
        return Ok(());
    }
    let failed = |e: &(dyn std::error::Error + 'static), code: u8| Failure::of(code, e);
    let accept = crate::trust::Code::parse_list(accept)
        .map_err(|e| failed(&ReportError::Format(e), super::exit::INVALID))?;
    let loaded = Store::open(db)
        .map_err(ReportError::from)
        .and_then(|store| ReportData::load_accepting(&store, &accept));
    let data = loaded.map_err(|e| failed(&e, super::report::code_of(&e)))?;
    export_all(&data, exports).map_err(|e| failed(&e, super::exit::OUTPUT))
}

/// Performs every export; says each on stderr.
pub(crate) fn export_all(data: &ReportData, exports: &[Export]) -> Result<(), ExportError> {
    for e in exports {
        match e {
            Export::Prometheus(path) => {
                std::fs::write(path, prometheus::render(data)).map_err(|source| {
                    ExportError::Write {
                        path: path.clone(),
                        source,
                    }
                })?;
                eprintln!("exported the metrics to {}", path.display());
            }
            Export::Otlp(url) => {
                let url = metrics_url(url);
                push(&url, &otlp::body(data))?;
                eprintln!("exported the metrics to {url} (OTLP/HTTP)");
            }
        }
    }
    Ok(())
}

fn push(url: &str, body: &serde_json::Value) -> Result<(), ExportError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ExportError::Runtime)?;
    let send = |source| ExportError::Send {
        url: url.to_string(),
        source,
    };
    runtime.block_on(async {
        let resp = reqwest::Client::builder()
            .timeout(OTLP_TIMEOUT)
            .build()
            .map_err(send)?
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(send)?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let text = resp.text().await.unwrap_or_default();
        Err(ExportError::Refused {
            url: url.to_string(),
            status: status.as_u16(),
            body: text.chars().take(300).collect(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_urls_join() {
        assert_eq!(
            "otlp=http://127.0.0.1:4318".parse(),
            Ok(Export::Otlp("http://127.0.0.1:4318".into()))
        );
        assert_eq!(
            "prometheus=m.prom".parse(),
            Ok(Export::Prometheus("m.prom".into()))
        );
        assert!("otlp=127.0.0.1:4318".parse::<Export>().is_err());
        assert!("influx=x".parse::<Export>().is_err());
        assert_eq!(metrics_url("http://c:4318/"), "http://c:4318/v1/metrics");
        assert_eq!(
            metrics_url("http://c:4318/v1/metrics"),
            "http://c:4318/v1/metrics"
        );
    }
}
