//! The load engine: sends a run's prepared requests over HTTP exactly as its load says
//! (closed loop, open loop, warmup handoff, duration, cancellation) and emits one
//! `RequestRecord` per request. It knows nothing about plans, storage or tables; it
//! depends on `api` only.

pub mod record;

pub use record::{Outcome, Phase, RequestRecord, Usage};
