//! What telemetry watches around one run: the server's counters scraped around its passes
//! (`counts`: the run's token and request counts against the server's) and the sampler
//! and a launched server's log over its measured pass (`watch`). The suite starts and
//! finishes them; they know the run's passes, not its plan.

pub mod counts;
pub mod watch;

/// What a run's telemetry reads: the server's cache counters (scraped around the measured
/// pass), the pages sampled during it (`None`: telemetry off), and a launched server's
/// log (`servers/<endpoint>.log`), read for its cache hits.
pub struct RunTelemetry {
    pub server: Option<super::ServerScrape>,
    pub plan: Option<super::sampler::TelemetryPlan>,
    pub server_log: Option<std::path::PathBuf>,
    pub store: std::sync::Arc<std::sync::Mutex<crate::store::Store>>,
}
