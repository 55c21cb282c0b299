//! The formulas of DESIGN.md ("Metrics"): per-run aggregates from `RequestRecord`s,
//! exact percentiles by linear interpolation, goodput, failure classes, client health.
//! Knows nothing about plans, HTTP or storage.

pub mod condition;
pub mod definitions;
pub mod failures;
pub mod names;
pub mod sla;
pub mod sla_objective;
pub mod stats;
mod summary;
#[cfg(test)]
mod tests;

pub use definitions::{timing, MetricDefinitions, Timing};
pub use stats::percentile;
pub use summary::{summarize, RunSummary, Slo, SloQuantity, SummaryOptions};
