//! The formulas of DESIGN.md ("Metrics"): per-run aggregates folded from
//! `RequestRecord`s one at a time (`Fold`), exact percentiles by linear interpolation
//! (ITL's bounded beyond `columns::EXACT_GAPS` gaps), goodput, failure classes, client
//! health; a run's time slices and its steady-state window (`slices`, `steady`).
//! Knows nothing about plans, HTTP or storage.

pub mod backfill;
pub mod capacity;
pub mod columns;
pub mod condition;
pub mod definitions;
pub mod explore;
pub mod failures;
mod fold;
pub mod input_lengths;
pub mod names;
pub mod presets;
mod rates;
pub mod registry;
mod registry_defs;
pub mod saturation;
pub mod sla;
pub mod slices;
pub mod slo;
pub mod stats;
pub mod steady;
pub mod step_tally;
pub mod steps;
pub mod student;
mod summary;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_clock;
pub mod turns;
pub mod window_fold;

pub use definitions::{timing, MetricDefinitions, Timing};
pub use fold::Fold;
pub use stats::percentile;
pub use summary::{summarize, Connections, Hardware, RunSummary, Slo, SloQuantity, SummaryOptions};
