//! perfplan: a declarative benchmark runner for LLM inference servers that speak the
//! OpenAI HTTP API. A plan file expands into ordered runs; one engine executes them;
//! every request lands in SQLite; reports put the runs side by side.
//!
//! Modules by stage; dependencies run one way (see STYLE.md):
//! `cli → everything`, `runner → planner, dataset, api, engine, metrics, store`,
//! `planner → plan`, `engine → api, control`, `report → store, metrics`; `control` (the
//! one URL rule, TLS, error chains) → `api` only.

pub mod api;
pub mod cli;
pub mod control;
pub mod dataset;
pub mod engine;
pub mod evalscope;
pub mod metrics;
pub mod plan;
pub mod planner;
pub mod record;
pub mod report;
pub mod request;
pub mod runner;
pub mod secrets;
pub mod sim;
pub mod store;
pub mod tokenize;
pub mod units;
