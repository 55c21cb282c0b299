//! Sinks: whom a suite tells of its runs as they land, besides its log. Each sink is
//! told of every run once the run is stored (its row finished in the database of the
//! suite's folder), so a dashboard sees a long suite progress; `run --export` makes each
//! exporter one (`cli::export`). A sink that fails is said once, with the run it failed
//! on, and the suite goes on; when the suite ends, the runs it failed on since are said
//! in one line.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use super::log::SuiteLog;

/// Telling a sink: done, or why not.
pub type Told<'a> = Pin<Box<dyn Future<Output = Result<(), Box<dyn std::error::Error>>> + 'a>>;

/// One sink of a suite.
pub trait Sink: std::fmt::Debug + Send + Sync {
    /// What it is and where it sends, for a warning (`--export otlp=http://…`).
    fn name(&self) -> String;
    /// Run `run` of the suite whose folder is `dir` is stored.
    fn run_stored<'a>(&'a self, dir: &'a Path, run: &'a str) -> Told<'a>;
}

/// The sinks of a suite, and the runs each has failed on.
#[derive(Debug, Clone, Default)]
pub struct Sinks {
    sinks: Vec<Arc<dyn Sink>>,
    /// By sink (its index), the runs it failed on.
    failed: Arc<Mutex<BTreeMap<usize, Vec<String>>>>,
}

impl Sinks {
    pub fn new(sinks: Vec<Arc<dyn Sink>>) -> Sinks {
        Sinks {
            sinks,
            failed: Arc::default(),
        }
    }

    /// Tells every sink that run `run` of the suite in `dir` is stored. A sink's first
    /// failure is said in the log with its error; later ones are kept for the suite's end.
    pub(crate) async fn run_stored(&self, log: &SuiteLog, dir: &Path, run: &str) {
        for (i, sink) in self.sinks.iter().enumerate() {
            let Err(e) = sink.run_stored(dir, run).await else {
                continue;
            };
            let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
            let runs = failed.entry(i).or_default();
            if runs.is_empty() {
                log.say(&format!(
                    "warning: {}: run {run}: {}; the suite goes on (later runs it fails on are named when the suite ends)",
                    sink.name(),
                    crate::control::chain(&*e)
                ));
            }
            runs.push(run.to_string());
        }
    }

    /// The suite has ended: each sink that failed on more than one run says on which.
    pub(crate) fn suite_ended(&self, log: &SuiteLog) {
        let failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        for (i, runs) in failed.iter().filter(|(_, runs)| runs.len() > 1) {
            let Some(sink) = self.sinks.get(*i) else {
                continue;
            };
            log.say(&format!(
                "warning: {}: failed on {} of the suite's runs: {}",
                sink.name(),
                runs.len(),
                runs.join(", ")
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that fails on the runs named in `failing`, and keeps the runs it was told of.
    #[derive(Debug, Default)]
    struct Kept {
        failing: Vec<&'static str>,
        told: Mutex<Vec<String>>,
    }

    impl Sink for Kept {
        fn name(&self) -> String {
            "kept".into()
        }
        fn run_stored<'a>(&'a self, _: &'a Path, run: &'a str) -> Told<'a> {
            Box::pin(async move {
                self.told
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(run.into());
                match self.failing.contains(&run) {
                    true => Err(format!("cannot send {run}").into()),
                    false => Ok(()),
                }
            })
        }
    }

    #[tokio::test]
    async fn every_sink_hears_every_run_and_a_failure_is_said_once() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = SuiteLog::open(dir.path(), false, None);
        let failing = Arc::new(Kept {
            failing: vec!["b", "c"],
            ..Kept::default()
        });
        let fine = Arc::new(Kept::default());
        let sinks = Sinks::new(vec![failing.clone(), fine.clone()]);
        for run in ["a", "b", "c"] {
            sinks.run_stored(&log, dir.path(), run).await;
        }
        sinks.suite_ended(&log);
        drop(log);
        for sink in [&failing, &fine] {
            let told = sink.told.lock().unwrap_or_else(PoisonError::into_inner);
            assert_eq!(*told, ["a", "b", "c"]);
        }
        let said = std::fs::read_to_string(dir.path().join("perfplan.log")).unwrap_or_default();
        let warnings: Vec<&str> = said.lines().filter(|l| l.starts_with("warning")).collect();
        assert_eq!(warnings.len(), 2, "{said}");
        assert!(
            warnings[0].starts_with("warning: kept: run b: cannot send b;"),
            "{said}"
        );
        assert_eq!(
            warnings[1],
            "warning: kept: failed on 2 of the suite's runs: b, c"
        );
    }
}
