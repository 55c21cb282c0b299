//! `run --export`: each exporter a sink of the suite (`live::sink`), told of each run as
//! it is stored. It reads the suite's database as it stands and sends what the exporter
//! sends live ([`Live`]): the run's metrics, or every run stored so far.

use std::path::Path;
use std::sync::Arc;

use super::{deliver, Export, Live};
use crate::live::sink::{Sink, Sinks, Told};
use crate::report::ReportData;
use crate::store::Store;

/// One `--export` of `run`, as a sink.
#[derive(Debug)]
struct LiveExport {
    export: Export,
    /// `--accept`: the verdicts sent are judged as the suite's report judges them.
    accept: Vec<crate::trust::Code>,
}

impl Sink for LiveExport {
    fn name(&self) -> String {
        format!("--export {}", self.export)
    }

    fn run_stored<'a>(&'a self, dir: &'a Path, run: &'a str) -> Told<'a> {
        Box::pin(async move {
            let store = Store::open(dir)?;
            // On the clock the report shows (the plan's `[report] clock`).
            let over = crate::report::Layout::default();
            let (mut data, _) = ReportData::load_laid_out(&store, &self.accept, &over)?;
            drop(store);
            if self.export.exporter.live == Live::Run {
                data.runs.retain(|r| r.id == run && !r.metrics.is_empty());
                if data.runs.is_empty() {
                    return Ok(());
                }
            }
            deliver(self.export.delivery(&data)).await?;
            Ok(())
        })
    }
}

/// The sinks of `run`'s `--export`s, their verdicts judged with `accept` too.
pub(crate) fn sinks(exports: &[Export], accept: &[crate::trust::Code]) -> Sinks {
    Sinks::new(
        exports
            .iter()
            .map(|export| {
                Arc::new(LiveExport {
                    export: export.clone(),
                    accept: accept.to_vec(),
                }) as Arc<dyn Sink>
            })
            .collect(),
    )
}
