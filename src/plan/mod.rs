//! The plan language: serde + schemars types of a plan, loading TOML and YAML into one
//! spanned tree, `${VAR}` interpolation, `--set` overrides, imports, schema validation and
//! located diagnostics. Knows nothing about HTTP, runs or storage.

pub mod matrix;
pub mod spec;

pub use matrix::MatrixSpec;
pub use spec::*;
