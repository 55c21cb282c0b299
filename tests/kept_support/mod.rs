//! The engine keeps no records: a run's records are what its sink keeps. These tests
//! keep them all (their runs are small) with [`run_kept`]; [`Ran`] reads like the run's
//! output with its records beside it.

#![allow(dead_code)]

use perfplan::engine::{
    self, CancelHandle, Endpoint, RequestSource, RunConfig, RunError, RunOutput,
};
use perfplan::record::RequestRecord;

/// A run's output and every record its sink was handed, in completion order.
pub struct Ran {
    pub output: RunOutput,
    pub records: Vec<RequestRecord>,
}

impl std::ops::Deref for Ran {
    type Target = RunOutput;
    fn deref(&self) -> &RunOutput {
        &self.output
    }
}

/// `engine::run`, keeping every record; `observe` sees each as it completes.
pub async fn run_kept(
    ep: &Endpoint,
    source: &mut (dyn RequestSource + Send),
    cfg: &RunConfig,
    cancel: &CancelHandle,
    mut observe: impl FnMut(&RequestRecord) + Send,
) -> Result<Ran, RunError> {
    let mut records = Vec::new();
    let output = engine::run(ep, source, cfg, cancel, &mut |r: RequestRecord| {
        observe(&r);
        records.push(r);
    })
    .await?;
    Ok(Ran { output, records })
}
