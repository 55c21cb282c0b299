//! The plan language: serde + schemars types of a plan, loading TOML and YAML into one
//! spanned tree, `${VAR}` interpolation, `--set` overrides, imports, schema validation and
//! located diagnostics. Knows nothing about HTTP, runs or storage.

pub mod access;
pub mod cancel_spec;
pub mod checks_spec;
pub mod explore_spec;
pub mod hardware_spec;
pub mod load_spec;
pub mod matrix;
pub mod mix_spec;
pub mod ramp_spec;
pub mod request_spec;
pub mod spec;
pub mod telemetry_spec;
mod timeouts_spec;
pub mod trust_spec;

pub use access::{PathsSpec, TlsSpec};
pub use cancel_spec::{CancelAfter, CancelSpec};
pub use checks_spec::ChecksSpec;
pub use explore_spec::{ExploreBy, ExploreLevel, ExploreSpec, ExploreStep};
pub use hardware_spec::HardwareSpec;
pub use load_spec::*;
pub use matrix::MatrixSpec;
pub use ramp_spec::{ConcurrencyRampSpec, RampShape, RampSpec};
pub use request_spec::*;
pub use spec::*;
pub use telemetry_spec::{TelemetrySpec, DEFAULT_INTERVAL};
pub use trust_spec::TrustSpec;
pub mod baseline_gates;
pub mod bounds;
mod capacity_checks;
pub mod dataset_keys;
pub mod dataset_plan;
pub mod diag;
pub mod emit;
pub mod imports;
pub mod interp;
pub mod limits;
pub mod load;
pub mod node;
pub mod path_names;
pub mod prefix_groups;
pub mod prune;
pub mod ranges;
pub mod replicas;
pub mod secrets;
pub mod semantic;
pub mod set;
mod sim_checks;
pub mod sim_golden;
pub mod sim_settings;
mod token_range;
pub mod toml_src;
mod trace_checks;
pub mod validate;
pub mod yaml_src;

pub use dataset_plan::{
    DatasetPlan, DatasetPlanError, FileSelect, MixClassPlan, MixPlan, MultiTurn, ToolLoop,
    TraceFormat, TracePlan,
};
pub use load::{
    load_plan, load_plan_partial, plan_schema, process_env, Failed, LoadOptions, LoadedPlan,
};
