//! Trust in a run's numbers: the typed warnings of a run (a stable code, a severity and a
//! sentence each), the evidence its records give (folded as they are written), the pure
//! rules that turn evidence, summary values and the server's counters into reasons, and
//! the verdict (`valid`, `suspect`, `invalid`) those reasons give under the `[trust]`
//! thresholds. Read by every report, `compare`, gates, searches and merges.
//! Knows records and numbers; not HTTP, SQLite, plans' syntax or the engine.

pub mod code;
pub mod evidence;
pub mod judge;
mod judge_server;
pub mod judge_stream;
mod judge_values;
pub mod of_summary;
pub mod thresholds;
pub mod verdict;
pub mod warning;

pub use code::{Code, Severity};
pub use evidence::{Evidence, EvidenceFold};
pub use judge::{judge, Counts, RunFacts, ServerCounts};
pub use thresholds::Thresholds;
pub use verdict::{Policy, Reason, Status, Verdict};
pub use warning::RunWarning;
