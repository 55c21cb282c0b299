//! What the dataset tests share: `materialize` of a dataset table as written, typed
//! first by `DatasetPlan::from_spec` as the planner types every run's dataset.

use perfplan::dataset::{DatasetContext, DatasetError, Materialized};
use perfplan::plan::{DatasetPlan, DatasetSpec};

/// The prompts of `spec` for `ctx`; a table that makes no typed plan (a required key
/// missing, a key of another kind) is the error the planner would report.
pub fn materialize(spec: &DatasetSpec, ctx: &DatasetContext) -> Result<Materialized, DatasetError> {
    perfplan::dataset::materialize(&DatasetPlan::from_spec(spec)?, ctx)
}
