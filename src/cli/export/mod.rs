//! `--export KIND=TARGET`: a suite's metrics pushed where a team looks, by `report` (the
//! stored suite) and `run` (each run as it is stored, then the whole suite when it ends).
//! Each exporter is one registration in [`EXPORTERS`], its module saying what it sends
//! where (a [`Delivery`]); `--export`'s parsing and its error, the commands' help and so
//! the book's CLI reference come from that list, and delivering is done here, once.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use super::failure::Failure;
use crate::report::{ReportData, ReportError};
use crate::store::Store;

mod live;
mod otlp;
mod prometheus;

pub(crate) use live::sinks;

/// How long a collector may take to answer.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// One exporter as the command line knows it.
#[derive(Debug)]
pub(crate) struct Exporter {
    /// Its KIND on the command line.
    pub kind: &'static str,
    /// What its TARGET is (`URL`, `FILE`).
    pub target: &'static str,
    /// One line of help: where the metrics go and in what form.
    pub help: &'static str,
    /// Whether TARGET will do; if not, what it should be (`a URL beginning http://`).
    pub check: fn(&str) -> Result<(), &'static str>,
    /// What exporting `data` to TARGET sends where.
    pub deliver: fn(&str, &ReportData) -> Delivery,
    /// What `run --export` sends as each run is stored.
    pub live: Live,
}

/// What an exporter sends as each run of `run --export` is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Live {
    /// That run's metrics (a push: what was sent stays sent).
    Run,
    /// Every run stored so far (a file read whole: it is rewritten).
    Suite,
}

/// Every exporter, once.
const EXPORTERS: &[&Exporter] = &[&otlp::EXPORTER, &prometheus::EXPORTER];

/// What an export sends, and where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Delivery {
    /// An HTTP POST of `body` (of `content_type`) to `url`.
    Post {
        url: String,
        content_type: &'static str,
        body: String,
    },
    /// `text` written to the file `path` (replacing it).
    File { path: PathBuf, text: String },
}

/// One `--export`: an exporter and its target.
#[derive(Debug, Clone)]
pub struct Export {
    exporter: &'static Exporter,
    target: String,
}

impl PartialEq for Export {
    fn eq(&self, other: &Export) -> bool {
        (self.exporter.kind, &self.target) == (other.exporter.kind, &other.target)
    }
}

impl Export {
    /// What `data` exported here sends where.
    fn delivery(&self, data: &ReportData) -> Delivery {
        (self.exporter.deliver)(&self.target, data)
    }
}

impl std::fmt::Display for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.exporter.kind, self.target)
    }
}

/// Every exporter as `KIND=TARGET` with its help, `a, b or c`.
fn kinds() -> String {
    let each: Vec<String> = EXPORTERS
        .iter()
        .map(|e| format!("`{}={}` ({})", e.kind, e.target, e.help))
        .collect();
    match each.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The help of a command's `--export`: `intro`, then every exporter.
pub(crate) fn help(intro: &str) -> String {
    format!("{intro}: {}; repeatable", kinds())
}

impl FromStr for Export {
    type Err = String;
    fn from_str(s: &str) -> Result<Export, String> {
        let Some((kind, target)) = s.split_once('=') else {
            return Err(format!("`{s}`: write KIND=TARGET, one of {}", kinds()));
        };
        let Some(exporter) = EXPORTERS.iter().copied().find(|e| e.kind == kind) else {
            let hint = crate::suggest::nearest(kind, EXPORTERS.iter().map(|e| e.kind))
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "`{kind}` is not an exporter{hint}; write one of {}",
                kinds()
            ));
        };
        (exporter.check)(target).map_err(|why| {
            format!(
                "`{s}`: the {} of `{kind}` is {why}",
                exporter.target.to_lowercase()
            )
        })?;
        Ok(Export {
            exporter,
            target: target.to_string(),
        })
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    #[error("cannot push the metrics to {url}")]
    Send {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered {status}: {body}")]
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

/// `--export` of the suite in `db` (a database or output folder): every export done, or
/// the first that failed. The metrics are on the report's clock (`clock`, else the
/// plan's `[report] clock`, else the kernel's), as the report shows them.
pub(crate) fn export_suite(
    db: &Path,
    (accept, clock): (&[String], Option<crate::record::Clock>),
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
        .and_then(|store| {
            let over = crate::report::Layout {
                clock,
                ..crate::report::Layout::default()
            };
            ReportData::load_laid_out(&store, &accept, &over).map(|(data, _)| data)
        });
    let data = loaded.map_err(|e| failed(&e, super::report::code_of(&e)))?;
    export_all(&data, exports).map_err(|e| failed(&e, super::exit::OUTPUT))
}

/// Performs every export; says each on stderr.
pub(crate) fn export_all(data: &ReportData, exports: &[Export]) -> Result<(), ExportError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ExportError::Runtime)?;
    for e in exports {
        let sent = runtime.block_on(deliver(e.delivery(data)))?;
        eprintln!("exported the metrics to {sent}");
    }
    Ok(())
}

/// Writes `text` to `path` whole or not at all: into a file beside it, then renamed over
/// it, so a reader (a node exporter's textfile collector scraping while `run --export`
/// rewrites the file after each run) never sees half a file.
fn replace_file(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".perfplan-{}.tmp", std::process::id()));
    let temp = path.with_file_name(name);
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
}

/// Sends `delivery`; where it went, as said after an export.
async fn deliver(delivery: Delivery) -> Result<String, ExportError> {
    match delivery {
        Delivery::File { path, text } => {
            replace_file(&path, &text).map_err(|source| ExportError::Write {
                path: path.clone(),
                source,
            })?;
            Ok(path.display().to_string())
        }
        Delivery::Post {
            url,
            content_type,
            body,
        } => {
            post(&url, content_type, body).await?;
            Ok(url)
        }
    }
}

async fn post(url: &str, content_type: &str, body: String) -> Result<(), ExportError> {
    let send = |source| ExportError::Send {
        url: url.to_string(),
        source,
    };
    let resp = reqwest::Client::builder()
        .timeout(POST_TIMEOUT)
        .build()
        .map_err(send)?
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .body(body)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file is replaced by a rename (a reader sees the old file or the new one), and
    /// nothing is left beside it, written or not.
    #[test]
    fn a_file_is_replaced_whole_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perfplan.prom");
        std::fs::write(&path, "old\n").unwrap();
        let before = std::fs::metadata(&path).unwrap();
        replace_file(&path, "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        use std::os::unix::fs::MetadataExt;
        let after = std::fs::metadata(&path).unwrap();
        assert_ne!(
            before.ino(),
            after.ino(),
            "renamed over, not written in place"
        );
        let missing = dir.path().join("no-such-dir/perfplan.prom");
        assert!(replace_file(&missing, "x").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn every_exporter_is_registered_once_and_parses_by_its_kind() {
        for e in EXPORTERS {
            assert_eq!(EXPORTERS.iter().filter(|o| o.kind == e.kind).count(), 1);
            assert!(kinds().contains(&format!("`{}={}`", e.kind, e.target)));
        }
        let parsed = "otlp=http://127.0.0.1:4318".parse::<Export>();
        assert_eq!(
            parsed.map(|e| e.to_string()).as_deref(),
            Ok("otlp=http://127.0.0.1:4318")
        );
        let parsed = "prometheus=m.prom".parse::<Export>();
        assert_eq!(
            parsed.map(|e| e.exporter.kind),
            Ok(prometheus::EXPORTER.kind)
        );
    }

    #[test]
    fn a_wrong_export_is_named_with_the_kinds() {
        let err = |s: &str| s.parse::<Export>().err().unwrap_or_default();
        let e = err("otlp=127.0.0.1:4318");
        assert!(
            e.starts_with("`otlp=127.0.0.1:4318`: the url of `otlp` is a URL beginning"),
            "{e}"
        );
        let e = err("prometheus=");
        assert!(e.contains("the file of `prometheus` is"), "{e}");
        let e = err("otlpp=http://c:4318");
        assert!(
            e.starts_with(
                "`otlpp` is not an exporter (did you mean `otlp`?); write one of `otlp=URL` ("
            ),
            "{e}"
        );
        assert!(e.contains(") or `prometheus=FILE` ("), "{e}");
        let e = err("influx=x");
        assert!(e.starts_with("`influx` is not an exporter; write"), "{e}");
        let e = err("m.prom");
        assert!(
            e.starts_with("`m.prom`: write KIND=TARGET, one of `otlp=URL`"),
            "{e}"
        );
    }
}
