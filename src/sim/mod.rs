//! The built-in OpenAI-compatible simulator: `perfplan sim`, `sim://NAME` endpoints started
//! in-process, and `SimServer::start` for tests. It knows nothing about plans or the engine.

pub mod config;

pub use config::{SimConfig, UsageMode};
