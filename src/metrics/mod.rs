//! The formulas of DESIGN.md ("Metrics"): per-run aggregates from `RequestRecord`s,
//! exact percentiles by linear interpolation, goodput, failure classes, client health.
//! Knows nothing about plans, HTTP or storage.

pub mod condition;
pub mod names;
