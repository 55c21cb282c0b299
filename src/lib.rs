//! perfplan: a declarative benchmark runner for LLM inference servers that speak the
//! OpenAI HTTP API. A plan file expands into ordered runs; one engine executes them;
//! every request lands in SQLite; reports put the runs side by side.
//!
//! Modules by stage (DESIGN.md, "Architecture"); dependencies run one way and
//! `tests/architecture.rs` holds them: `cli` → the stages (`preflight`, `distribute`,
//! `search` → `suite` → `servers`, `telemetry`) → `engine` → `api`, `record`;
//! `planner → plan`; `report → store, metrics → record`; `control` (the one URL rule,
//! TLS, error chains) → `api` only; `environment` (what a suite measured on: its shape,
//! the client's facts, servers' answers decoded, differences) → `api` only, read by
//! `suite`, `store` and `report`.

pub mod api;
pub mod cli;
pub mod control;
pub mod dataset;
pub mod distribute;
pub mod either_io;
pub mod engine;
pub mod environment;
pub mod evalscope;
pub mod hash;
pub mod live;
pub mod measure;
pub mod metrics;
pub mod plan;
pub mod planner;
pub mod preflight;
pub mod probe;
pub mod record;
pub mod report;
pub mod request;
pub mod rx_stamp;
pub mod search;
pub mod secrets;
pub mod servers;
pub mod sim;
pub mod store;
pub mod suggest;
pub mod suite;
pub mod telemetry;
pub mod text;
pub mod tokenize;
pub mod trust;
pub mod units;
pub mod workload;
