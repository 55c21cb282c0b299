//! The load engine: sends a run's prepared requests over HTTP exactly as its load says
//! (closed loop, open loop, warmup handoff, duration, cancellation) and emits one
//! `RequestRecord` per request. It knows nothing about plans, storage or tables; it
//! depends on `api` only.
//!
//! Use: build each request body with `api::build_body`, wrap it in a `PreparedRequest`
//! (warmup ones first), put them in a `RequestSource` (`VecSource`), make one `Endpoint`
//! per server (`Endpoint::new(&target, cfg.pool_size())`) and call `run`. Records reach
//! the `RecordSink` as they complete (the engine keeps none: memory does not grow with
//! the number of requests); `RunOutput` says how many were sent. Times are offsets
//! from `RunOutput::started`. Before its clock starts, `run` opens the connections the
//! load keeps open (`preconnect`). `CancelHandle::cancel` (Ctrl-C) stops sending; requests in
//! flight get `RunConfig::grace`, then end as `Outcome::Cancelled`.

pub mod arrivals;
pub mod balance;
pub mod bounds;
mod cancel;
mod client_rule;
mod connect_times;
pub mod cpu;
mod exchange;
mod h1;
mod h1_body;
mod h1_head;
mod h1_wire;
mod levels;
pub mod limits;
mod load;
pub mod preconnect;
pub mod request_id;
mod response;
mod run;
pub mod schedule;
pub mod source;
mod stamped_tcp;
pub mod target;
mod ticker;
mod tls_sessions;
mod via_reqwest;

pub use crate::record::{excerpt, ERROR_EXCERPT_BYTES};
pub use crate::record::{Outcome, Phase, RequestRecord, Usage};
pub use arrivals::{ArrivalClock, ArrivalError, Arrivals};
pub use bounds::ResponseLimits;
pub use cpu::process_cpu_time;
pub use preconnect::Preconnect;
pub use request_id::{request_id, session_id};
pub use run::{
    run, CancelHandle, ChildGuard, LevelControl, Levels, Load, RecordSink, RunConfig, RunError,
    RunOutput,
};
pub use source::{Next, PreparedRequest, RequestSource, VecSource};
pub use target::{Balance, Endpoint, EngineError, Target, Timeouts};
