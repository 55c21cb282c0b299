//! An endpoint's `hardware`: what the server runs on and what it costs, for the capacity
//! metrics (tokens/s per accelerator, cost per million tokens). It describes the
//! deployment, never what a run sends, so it is left out of run ids
//! (`planner::run_id`): a plan that adds it, or a price change, keeps its runs' ids and
//! their comparisons with earlier suites.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `hardware = { accelerators = 8, kind = "H200", cost_per_hour = 25.0 }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HardwareSpec {
    /// Accelerators (GPUs, TPUs, …) serving the endpoint together: `output_tps_per_accelerator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub accelerators: Option<u32>,
    /// What they are (`"H200"`), shown with the run's settings; no figure reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// What the whole endpoint (all its accelerators) costs per hour, in any one currency:
    /// the `cost_per_million_*` metrics are in the same currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1_000_000_000.0))]
    pub cost_per_hour: Option<f64>,
}

impl HardwareSpec {
    /// The figures the metrics read.
    pub fn metrics(&self) -> crate::metrics::Hardware {
        crate::metrics::Hardware {
            accelerators: self.accelerators,
            cost_per_hour: self.cost_per_hour.filter(|c| c.is_finite()),
        }
    }
}
